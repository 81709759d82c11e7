// Writing files through FileStore::create_writer: a hidden temporary, fsynced and renamed on
// commit, removed on abort, failure or destruction, its blocking calls off the caller's thread;
// and the temporaries of killed writers, removed by abort_stale_uploads.

#include <fcntl.h>
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "storage/file/file_writer.hpp"
#include "storage/killed_writer.hpp"
#include "storage/output_file.hpp"
#include "support/random_bytes.hpp"
#include "support/run_task.hpp"
#include "support/temp_dir.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/file_store.hpp"

namespace tensorstream {
namespace {

namespace fs = std::filesystem;
using std::chrono::system_clock;
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

// The bytes this thread has handed to write(2) and its kin, as the kernel counts them per thread;
// nullopt where it keeps no count (a kernel without task I/O accounting).
std::optional<std::uint64_t> bytes_written_by_this_thread() {
  std::ifstream counts("/proc/thread-self/io");
  std::string field;
  std::uint64_t value = 0;
  while (counts >> field >> value) {
    if (field == "wchar:") return value;
  }
  return std::nullopt;
}

boost::asio::awaitable<void> note_when_done(boost::asio::awaitable<void> step,
                                            std::vector<std::string>* noted) {
  co_await std::move(step);
  noted->push_back("step done");
}

boost::asio::awaitable<void> note_running(std::vector<std::string>* noted) {
  noted->push_back("other ran");
  co_return;
}

class FileWriterTest : public ::testing::Test {
 protected:
  void write(ObjectWriter& writer, const std::string& bytes) {
    testing::run_task(io_, writer.write(std::as_bytes(std::span(bytes))));
  }

  // Starts `step` and then another coroutine on the test's single thread, and returns the order
  // in which they finished. A step that does its work on this thread finishes first; one that
  // suspends until another thread has done it lets the other coroutine run meanwhile.
  std::vector<std::string> order_beside(boost::asio::awaitable<void> step) {
    std::vector<std::string> noted;
    const auto rethrow = [](std::exception_ptr error) {
      if (error) std::rethrow_exception(error);
    };
    boost::asio::co_spawn(io_, note_when_done(std::move(step), &noted), rethrow);
    boost::asio::co_spawn(io_, note_running(&noted), rethrow);
    io_.restart();
    io_.run();
    return noted;
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

// A write or an fsync that blocks (a slow disk, an NFS server under load) must not stall the other
// requests of the store's I/O thread into their timeouts.
TEST_F(FileWriterTest, WritesAndTheCommitRunOffTheCallersThreadWhichServesOthersMeanwhile) {
  const fs::path path = dir_.path() / "model.bin";
  const std::string content = testing::random_bytes(1 << 20, 2);
  auto writer = store_.create_writer(path.string());
  const auto written_before = bytes_written_by_this_thread();
  const auto order = order_beside(writer->write(std::as_bytes(std::span(content))));
  const auto written_after = bytes_written_by_this_thread();
  const std::vector<std::string> other_first = {"other ran", "step done"};
  EXPECT_EQ(order, other_first);
  // Not a byte of it from this thread (both nullopt where the kernel counts nothing).
  EXPECT_EQ(written_after, written_before);
  EXPECT_EQ(order_beside(writer->commit()), other_first);
  EXPECT_EQ(contents(path), content);

  auto aborted = store_.create_writer((dir_.path() / "aborted.bin").string());
  write(*aborted, "partial");
  EXPECT_EQ(order_beside(aborted->abort()), other_first);
  EXPECT_EQ(names_in(dir_.path()), std::vector<std::string>{"model.bin"});
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

// What killed writers leave behind, and FileStore::abort_stale_uploads removing it: the hidden
// temporaries, recognised by name, at any depth, only once old enough.

// 2026-01-02T03:04:05Z, a time long past.
const system_clock::time_point long_ago = system_clock::from_time_t(1767323045);

// Creates `path` (and its directories) last modified at `modified`.
void create(const fs::path& path, system_clock::time_point modified) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << "partial";
  const auto seconds = system_clock::to_time_t(modified);
  const timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

class FileStaleUploadsTest : public ::testing::Test {
 protected:
  StaleUploads abort_stale(const fs::path& directory, system_clock::duration older_than) {
    FileStore store(io_.get_executor());
    return testing::run_task(io_,
                             store.abort_stale_uploads(directory.string() + "/", older_than));
  }

  boost::asio::io_context io_;
  TempDir dir_;
};

TEST_F(FileStaleUploadsTest, TemporaryNamesAreRecognisedWithTheNameTheyWereFor) {
  const std::string long_name(250, 'n');
  for (const std::string& name : {std::string("model.safetensors"), long_name,
                                 std::string("x.tensorstream-1-0123456789abcdef.tmp")}) {
    const detail::OutputFile file(dir_.path() / name);
    EXPECT_EQ(detail::temporary_target(file.temporary().filename().string()),
              name.substr(0, 200));
  }
  for (const std::string name :
       {"model.bin", ".model.bin.tmp", ".model.bin.tensorstream-12-0123456789abcde.tmp",
        ".model.bin.tensorstream-12-0123456789abcdef0.tmp",
        ".model.bin.tensorstream--0123456789abcdef.tmp",
        ".model.bin.tensorstream-1a-0123456789abcdef.tmp",
        "model.bin.tensorstream-12-0123456789abcdef.tmp",
        ".tensorstream-12-0123456789abcdef.tmp",
        ".model.bin.tensorstream-12-0123456789abcdef.part"}) {
    EXPECT_EQ(detail::temporary_target(name), std::nullopt) << name;
  }
}

TEST_F(FileStaleUploadsTest, AKilledWriterLeavesOnlyItsTemporaryUntilCleanupRemovesIt) {
  const fs::path path = dir_.path() / "llama" / "model.bin";
  testing::kill_writer_midway([&](const std::function<void()>& reached) {
    FileWriter writer(path);
    const std::string bytes(1 << 20, 'w');
    testing::run_task(writer.write(std::as_bytes(std::span(bytes))));
    reached();
  });
  const auto left = names_in(path.parent_path());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(detail::temporary_target(left[0]), "model.bin") << left[0];
  EXPECT_EQ(fs::file_size(path.parent_path() / left[0]), std::uintmax_t{1} << 20);

  // Just written: a writer still at work, as far as an hour's margin can tell.
  const StaleUploads recent = abort_stale(dir_.path(), std::chrono::hours(1));
  EXPECT_TRUE(recent.removed.empty());
  EXPECT_EQ(recent.kept, 1u);
  EXPECT_EQ(names_in(path.parent_path()), left);

  const StaleUploads stale = abort_stale(dir_.path(), system_clock::duration::zero());
  ASSERT_EQ(stale.removed.size(), 1u);
  EXPECT_EQ(stale.removed[0].key, path.string());
  EXPECT_EQ(stale.removed[0].upload, (path.parent_path() / left[0]).string());
  EXPECT_EQ(stale.kept, 0u);
  EXPECT_TRUE(names_in(path.parent_path()).empty());
  FileStore store(io_.get_executor());
  const std::string prefix = dir_.path().string() + "/";
  EXPECT_TRUE(testing::run_task(io_, store.list(prefix, ListDepth::recursive)).empty());
}

TEST_F(FileStaleUploadsTest, OnlyTemporariesOldEnoughAreRemovedAtAnyDepth) {
  const fs::path& dir = dir_.path();
  create(dir / "model.bin", long_ago);
  create(dir / ".model.bin.tensorstream-41-00000000000000aa.tmp", long_ago);
  create(dir / "sub" / "deeper" / ".config.json.tensorstream-7-00000000000000bb.tmp",
         long_ago + std::chrono::seconds(1));
  create(dir / "sub" / ".fresh.bin.tensorstream-9-00000000000000cc.tmp", system_clock::now());
  create(dir / "sub" / "notes.tensorstream-41-00000000000000aa.tmp", long_ago);
  create(dir / ".hidden", long_ago);
  // Links to directories are not followed: what they lead to is no part of the prefix.
  TempDir elsewhere;
  create(elsewhere.path() / ".other.bin.tensorstream-3-00000000000000dd.tmp", long_ago);
  fs::create_directory_symlink(elsewhere.path(), dir / "linked");

  const StaleUploads stale = abort_stale(dir, std::chrono::hours(1));
  ASSERT_EQ(stale.removed.size(), 2u);
  EXPECT_EQ(stale.removed[0].key, (dir / "model.bin").string());
  EXPECT_EQ(stale.removed[0].upload,
            (dir / ".model.bin.tensorstream-41-00000000000000aa.tmp").string());
  EXPECT_EQ(stale.removed[0].started, long_ago);
  EXPECT_EQ(stale.removed[1].key, (dir / "sub" / "deeper" / "config.json").string());
  EXPECT_EQ(stale.removed[1].started, long_ago + std::chrono::seconds(1));
  EXPECT_EQ(stale.kept, 1u);
  EXPECT_EQ(names_in(dir), (std::vector<std::string>{".hidden", "linked", "model.bin", "sub"}));
  EXPECT_EQ(names_in(dir / "sub"),
            (std::vector<std::string>{".fresh.bin.tensorstream-9-00000000000000cc.tmp", "deeper",
                                      "notes.tensorstream-41-00000000000000aa.tmp"}));
  EXPECT_TRUE(names_in(dir / "sub" / "deeper").empty());
  EXPECT_EQ(names_in(elsewhere.path()),
            std::vector<std::string>{".other.bin.tensorstream-3-00000000000000dd.tmp"});
}

TEST_F(FileStaleUploadsTest, AMissingDirectoryHasNothingToRemoveAndAPrefixNeedsASlash) {
  const StaleUploads none = abort_stale(dir_.path() / "absent", system_clock::duration::zero());
  EXPECT_TRUE(none.removed.empty());
  EXPECT_EQ(none.kept, 0u);
  FileStore store(io_.get_executor());
  const std::string file = (dir_.path() / "model.bin").string();
  try {
    testing::run_task(io_, store.abort_stale_uploads(file, system_clock::duration::zero()));
    FAIL() << "a prefix without '/' was taken";
  } catch (const InvalidArgument& error) {
    EXPECT_EQ(std::string(error.what()),
              file + ": removing stale temporaries needs a directory path ending in '/'");
  }
}

}  // namespace
}  // namespace tensorstream
