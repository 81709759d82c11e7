// tensorstream: stream safetensors checkpoints from object storage into memory.

#include "cli/run.hpp"

int main(int argc, char** argv) { return tensorstream::cli::run(argc, argv); }
