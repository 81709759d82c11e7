#pragma once

namespace tensorstream::cli {

/// The tool: parses `argv` (argv[0] the program's name), runs the command it names and returns
/// the exit status: 0 done, 1 a runtime failure, 2 a usage error, each error printed as one line
/// `tensorstream: error: ...` on stderr. main() is this alone; tests call it in process to run
/// commands against what they set up there (a scheme they register, say).
int run(int argc, char** argv);

}  // namespace tensorstream::cli
