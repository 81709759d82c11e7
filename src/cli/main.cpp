// tensorstream: stream safetensors checkpoints from object storage into memory.

#include <cstdlib>

#include "cli/run.hpp"

int main(int argc, char** argv) {
  // libtorch, which a distributed stream loads, logs c10d's failures through glog on stderr
  // besides the exception that reports them, and the tool says each error once. glog reads this
  // when it loads; set here, before any thread starts, since setenv is not thread-safe (the
  // library leaves the environment alone), and unless the user set it.
  setenv("GLOG_minloglevel", "3", 0);
  return tensorstream::cli::run(argc, argv);
}
