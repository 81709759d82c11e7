// Writing files through FileStore::create_writer: a hidden temporary, fsynced and renamed on
// commit, removed on abort, failure or destruction.

#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> names_in(const fs::path& directory) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(directory)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class FileWriterTest : public ::testing::Test {
 protected:
  void write(ObjectWriter& writer, const std::string& bytes) {
    testing::run_task(io_, writer.write(std::as_bytes(std::span(bytes))));
  }

  boost::asio::io_context io_;
  FileStore store_{io_.get_executor()};
  TempDir dir_;
};

TEST_F(FileWriterTest, CommitCreatesParentsAndRenamesTheWholeFileIntoPlace) {
  ASSERT_TRUE(store_.can_write());
  const fs::path path = dir_.path() / "a" / "b" / "model.bin";
  const std::string content = testing::random_bytes(3'000'001, 1);
  auto writer = store_.create_writer(path.string());
  EXPECT_EQ(writer->url(), path.string());
  write(*writer, content.substr(0, 1'000'000));
  write(*writer, content.substr(1'000'000));
  // Before commit only the hidden temporary exists.
  EXPECT_FALSE(fs::exists(path));
  const auto pending = names_in(path.parent_path());
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_TRUE(pending[0].starts_with(".model.bin.tensorstream-")) << pending[0];
  EXPECT_TRUE(pending[0].ends_with(".tmp")) << pending[0];
  EXPECT_EQ(fs::file_size(path.parent_path() / pending[0]), content.size());

  testing::run_task(io_, writer->commit());
  EXPECT_EQ(contents(path), content);
  EXPECT_EQ(names_in(path.parent_path()), std::vector<std::string>{"model.bin"});
  EXPECT_THROW(write(*writer, "more"), StateError);
  testing::run_task(io_, writer->abort());  // Nothing to abort after a commit.
  EXPECT_EQ(contents(path), content);
}

TEST_F(FileWriterTest, AnExistingFileIsReplacedOnlyAtCommit) {
  const fs::path path = dir_.path() / "config.json";
  std::ofstream(path) << "old";
  auto writer = store_.create_writer(path.string());
  write(*writer, "new contents");
  EXPECT_EQ(contents(path), "old");
  testing::run_task(io_, writer->commit());
  EXPECT_EQ(contents(path), "new contents");
}

TEST_F(FileWriterTest, AbortAndDestructionRemoveTheTemporaryAndKeepTheOldFile) {
  const fs::path path = dir_.path() / "kept.bin";
  std::ofstream(path) << "old";
  auto aborted = store_.create_writer(path.string());
  write(*aborted, "partial");
  testing::run_task(io_, aborted->abort());
  EXPECT_THROW(testing::run_task(io_, aborted->commit()), StateError);
  {
    auto dropped = store_.create_writer(path.string());
    write(*dropped, "partial");
  }
  EXPECT_EQ(names_in(dir_.path()), std::vector<std::string>{"kept.bin"});
  EXPECT_EQ(contents(path), "old");
}

TEST_F(FileWriterTest, EmptyFilesAndBadDestinationsAreHandled) {
  const fs::path empty = dir_.path() / "empty";
  auto writer = store_.create_writer(empty.string());
  testing::run_task(io_, writer->commit());
  EXPECT_TRUE(fs::exists(empty));
  EXPECT_EQ(fs::file_size(empty), 0u);

  EXPECT_THROW(store_.create_writer(dir_.path().string() + "/"), InvalidArgument);
  // A parent that is a file.
  const fs::path blocked = empty / "child.bin";
  try {
    store_.create_writer(blocked.string());
    FAIL() << "a directory was created under a file";
  } catch (const StorageError& error) {
    EXPECT_EQ(error.object(), blocked.string());
    EXPECT_NE(std::string(error.what()).find("cannot create directory"), std::string::npos)
        << error.what();
  }
}

}  // namespace
}  // namespace tensorstream
