// A process ended by a signal runs no destructors, so the tool removes the temporaries of the
// files it was writing itself, through remove_output_temporaries().

#include "storage/output_file.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;

// Runs in a child process (a death test), since no file can be written after it.
int remove_and_check(const fs::path& dir) {
  detail::OutputFile written(dir / "a.bin");
  detail::OutputFile committed(dir / "b.bin");
  committed.commit();
  detail::remove_output_temporaries();
  if (fs::exists(written.temporary()) || !fs::exists(dir / "b.bin")) return 1;
  try {
    detail::OutputFile later(dir / "c.bin");
    return 2;
  } catch (const StorageError& error) {
    if (std::string(error.what()) !=
        (dir / "c.bin").string() + ": not written: the process is ending at a signal") {
      return 3;
    }
  }
  return fs::exists(dir / "c.bin") ? 4 : 0;
}

TEST(OutputFileTest, RemovingTheTemporariesAtASignalKeepsCommittedFilesAndRefusesNewOnes) {
  testing::TempDir dir;
  EXPECT_EXIT(std::_Exit(remove_and_check(dir.path())), ::testing::ExitedWithCode(0), "");
  EXPECT_EQ(fs::exists(dir.path() / "b.bin"), true);
}

}  // namespace
}  // namespace tensorstream
