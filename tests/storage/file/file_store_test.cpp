#include "tensorstream/storage/file_store.hpp"

#include <gtest/gtest.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_future.hpp>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <ostream>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "support/random_bytes.hpp"
#include "support/units.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "support/run_task.hpp"
#include "streaming/forwarding_store.hpp"
#include "support/temp_dir.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using testing::MiB;

// Not a multiple of any piece size, so the last piece of a whole-file read is a short one.
constexpr std::size_t kFileSize = 20 * MiB + 4099;

void write_file(const fs::path& path, const std::vector<std::byte>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::vector<std::byte> random_byte_vector(std::size_t size, unsigned seed) {
  const std::string bytes = testing::random_bytes(size, seed);
  const auto* first = reinterpret_cast<const std::byte*>(bytes.data());
  return {first, first + bytes.size()};
}

// Sets an environment variable for the lifetime of the object.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnvironment() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnvironment(const ScopedEnvironment&) = delete;
  ScopedEnvironment& operator=(const ScopedEnvironment&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

bool io_uring_disabled_by_environment() {
  const char* value = std::getenv("TENSORSTREAM_DISABLE_IO_URING");
  return value != nullptr && *value != '\0' && std::string_view(value) != "0";
}

constexpr auto run = [](auto& io, auto task) { return testing::run_task(io, std::move(task)); };

// The exception `operation` throws; it must be of exactly type E.
template <typename E, typename F>
std::optional<E> thrown(F&& operation) {
  try {
    operation();
  } catch (const E& error) {
    if (typeid(error) == typeid(E)) return error;
    ADD_FAILURE() << "threw a subclass of the expected type: " << error.what();
    return std::nullopt;
  } catch (const std::exception& error) {
    ADD_FAILURE() << "threw another type: " << error.what();
    return std::nullopt;
  }
  ADD_FAILURE() << "did not throw";
  return std::nullopt;
}

// Runs `check` in a child process and returns its exit status, for what cannot be undone in
// this one (dropping privileges, seccomp filters). Forking is safe: no test thread is running.
int in_child_process(const std::function<int()>& check) {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(check());
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

enum class Mode { io_uring, pread };

void PrintTo(Mode mode, std::ostream* out) {
  *out << (mode == Mode::io_uring ? "io_uring" : "pread");
}

std::string mode_name(const ::testing::TestParamInfo<Mode>& info) {
  return info.param == Mode::io_uring ? "IoUring" : "Pread";
}

class FileStoreTest : public ::testing::TestWithParam<Mode> {
 protected:
  static void SetUpTestSuite() {
    directory_ = new testing::TempDir();
    contents_ = new std::vector<std::byte>(random_byte_vector(kFileSize, 42));
    path_ = new std::string((directory_->path() / "data.bin").string());
    write_file(*path_, *contents_);
  }

  static void TearDownTestSuite() {
    delete path_;
    delete contents_;
    delete directory_;
  }

  void SetUp() override {
    if (GetParam() != Mode::io_uring) return;
    if (const auto reason = FileStore::io_uring_unavailable_reason(); !reason.empty()) {
      GTEST_SKIP() << "io_uring is unavailable here: " << reason;
    }
    if (io_uring_disabled_by_environment()) {
      GTEST_SKIP() << "TENSORSTREAM_DISABLE_IO_URING is set";
    }
  }

  FileOptions options() const {
    FileOptions options;
    options.use_io_uring = GetParam() == Mode::io_uring;
    return options;
  }

  std::vector<std::byte> read(FileStore& store, const std::string& path, std::uint64_t offset,
                              std::size_t length) {
    std::vector<std::byte> bytes(length);
    run(context_, store.read_range(path, offset, bytes));
    return bytes;
  }

  // Reads a range of the test file and compares it with what was written, naming the range.
  void expect_range(FileStore& store, std::uint64_t offset, std::size_t length) {
    const auto bytes = read(store, *path_, offset, length);
    const auto expected = std::span(*contents_).subspan(offset, length);
    // memcmp first: the unoptimised sanitizer builds compare byte by byte far more slowly.
    if (std::memcmp(bytes.data(), expected.data(), length) == 0) return;
    const auto mismatch = std::mismatch(bytes.begin(), bytes.end(), expected.begin());
    EXPECT_TRUE(mismatch.first == bytes.end())
        << "bytes " << offset << "+" << length << " differ at offset "
        << offset + static_cast<std::size_t>(mismatch.first - bytes.begin());
  }

  static testing::TempDir* directory_;
  static std::vector<std::byte>* contents_;
  static std::string* path_;
  asio::io_context context_;
};

testing::TempDir* FileStoreTest::directory_ = nullptr;
std::vector<std::byte>* FileStoreTest::contents_ = nullptr;
std::string* FileStoreTest::path_ = nullptr;

INSTANTIATE_TEST_SUITE_P(Modes, FileStoreTest, ::testing::Values(Mode::io_uring, Mode::pread),
                         mode_name);

TEST_P(FileStoreTest, RandomRangesHaveTheFilesBytes) {
  FileStore store(context_.get_executor(), options());
  std::mt19937_64 generator(7);
  for (int i = 0; i < 100; ++i) {
    const std::uint64_t offset = generator() % kFileSize;
    const std::size_t longest = std::min<std::size_t>(kFileSize - offset, 9 * MiB);
    // Half of the reads small, like header and small-tensor reads; half up to 9 MiB.
    const std::size_t length = i % 2 == 0 ? generator() % std::min<std::size_t>(longest + 1, 4096)
                                          : generator() % (longest + 1);
    expect_range(store, offset, length);
  }
}

TEST_P(FileStoreTest, ZeroLengthReadsSucceedAnywhereInTheFile) {
  FileStore store(context_.get_executor(), options());
  EXPECT_TRUE(read(store, *path_, 0, 0).empty());
  EXPECT_TRUE(read(store, *path_, kFileSize, 0).empty());
  EXPECT_EQ(store.stats().bytes, 0u);
}

TEST_P(FileStoreTest, ZeroLengthReadOfAMissingFileIsNotFound) {
  FileStore store(context_.get_executor(), options());
  const std::string missing = (directory_->path() / "missing.bin").string();
  const auto error = thrown<NotFoundError>([&] { read(store, missing, 0, 0); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()), missing + ": No such file or directory");
}

TEST_P(FileStoreTest, SingleBytesAtTheStartMiddleAndEnd) {
  FileStore store(context_.get_executor(), options());
  expect_range(store, 0, 1);
  expect_range(store, kFileSize / 2, 1);
  expect_range(store, kFileSize - 1, 1);
}

TEST_P(FileStoreTest, WholeFileInOneRead) {
  FileStore store(context_.get_executor(), options());
  expect_range(store, 0, kFileSize);
  EXPECT_EQ(store.stats().bytes, kFileSize);
}

TEST_P(FileStoreTest, RangesStraddlingPieceBoundaries) {
  FileStore store(context_.get_executor(), options());
  // Covers every power-of-two split size from 1 MiB to 16 MiB.
  for (std::size_t piece = MiB; piece <= 16 * MiB; piece *= 2) {
    expect_range(store, piece - 1, 2);
    expect_range(store, 0, piece - 1);
    expect_range(store, 0, piece);
    expect_range(store, 0, piece + 1);
    expect_range(store, 1, piece);
    expect_range(store, piece - 3, std::min(2 * piece + 7, kFileSize - (piece - 3)));
  }
}

TEST_P(FileStoreTest, ReadPastTheEndIsTruncatedNamingRangeAndSize) {
  FileStore store(context_.get_executor(), options());
  const auto error = thrown<StorageError>([&] { read(store, *path_, kFileSize - 10, 20); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->object(), *path_);
  EXPECT_EQ(error->cause(), "truncated: wanted bytes " + std::to_string(kFileSize - 10) + "-" +
                                std::to_string(kFileSize + 9) + " but the file has " +
                                std::to_string(kFileSize) + " bytes");
  EXPECT_FALSE(error->transient());
}

TEST_P(FileStoreTest, LargeReadEndingPastTheEndIsTruncated) {
  FileStore store(context_.get_executor(), options());
  const auto error = thrown<StorageError>([&] { read(store, *path_, 0, kFileSize + 1); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->cause(), "truncated: wanted bytes 0-" + std::to_string(kFileSize) +
                                " but the file has " + std::to_string(kFileSize) + " bytes");
}

TEST_P(FileStoreTest, ReadStartingPastTheEndIsTruncated) {
  FileStore store(context_.get_executor(), options());
  const auto error = thrown<StorageError>([&] { read(store, *path_, kFileSize + 100, 1); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->cause(), "truncated: wanted bytes " + std::to_string(kFileSize + 100) + "-" +
                                std::to_string(kFileSize + 100) + " but the file has " +
                                std::to_string(kFileSize) + " bytes");
}

TEST_P(FileStoreTest, ReadOfAMissingFileIsNotFoundNamingThePath) {
  FileStore store(context_.get_executor(), options());
  const std::string missing = (directory_->path() / "missing.bin").string();
  const auto error = thrown<NotFoundError>([&] { read(store, missing, 0, 16); });
  ASSERT_TRUE(error);
  EXPECT_EQ(error->object(), missing);
  EXPECT_EQ(error->cause(), "No such file or directory");
  EXPECT_EQ(std::string(error->what()), missing + ": No such file or directory");
}

TEST_P(FileStoreTest, PathThroughARegularFileIsNotFound) {
  FileStore store(context_.get_executor(), options());
  const std::string below_file = *path_ + "/inner.bin";
  const auto error = thrown<NotFoundError>([&] { read(store, below_file, 0, 1); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()), below_file + ": Not a directory");
}

TEST_P(FileStoreTest, ReadingADirectoryFails) {
  FileStore store(context_.get_executor(), options());
  const std::string directory = directory_->path().string();
  const auto error = thrown<StorageError>([&] { read(store, directory, 0, 1); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()), directory + ": Is a directory");
}

TEST_P(FileStoreTest, SizeIsTheFileSize) {
  FileStore store(context_.get_executor(), options());
  EXPECT_EQ(run(context_, store.size(*path_)), kFileSize);
}

TEST_P(FileStoreTest, SizeOfAMissingFileIsNotFound) {
  FileStore store(context_.get_executor(), options());
  const std::string missing = (directory_->path() / "missing.bin").string();
  const auto error = thrown<NotFoundError>([&] { run(context_, store.size(missing)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()), missing + ": No such file or directory");
}

TEST_P(FileStoreTest, UnreadableFileIsPermissionDenied) {
  testing::TempDir scratch;
  const fs::path file = scratch.path() / "secret.bin";
  write_file(file, random_byte_vector(100, 1));
  fs::permissions(file, fs::perms::none);
  fs::permissions(scratch.path(),
                  fs::perms::owner_all | fs::perms::group_exec | fs::perms::others_exec);
  // root ignores file modes, so the check runs as "nobody" in a child process.
  const int status = in_child_process([&] {
    if (::geteuid() == 0 && (::setgid(65534) != 0 || ::setuid(65534) != 0)) return 3;
    asio::io_context context;
    FileStore store(context.get_executor(), options());
    for (const bool via_size : {true, false}) {
      try {
        if (via_size) {
          run(context, store.size(file.string()));
        } else {
          std::vector<std::byte> bytes(10);
          run(context, store.read_range(file.string(), 0, bytes));
        }
        return 1;
      } catch (const NotFoundError&) {
        return 2;
      } catch (const StorageError& error) {
        if (std::string(error.what()) != file.string() + ": Permission denied") return 4;
      }
    }
    return 0;
  });
  if (status == 3) GTEST_SKIP() << "cannot drop root privileges to test permissions";
  EXPECT_EQ(status, 0) << "1: no error, 2: NotFoundError, 4: wrong message";
}

TEST_P(FileStoreTest, ListGivesRegularFilesOneLevelDeepSortedWithSizes) {
  testing::TempDir scratch;
  const fs::path& root = scratch.path();
  write_file(root / "b.safetensors", random_byte_vector(3, 1));
  write_file(root / "a.bin", {});
  write_file(root / "c.json", random_byte_vector(7, 2));
  fs::create_directory(root / "nested");
  write_file(root / "nested" / "inner.safetensors", random_byte_vector(5, 3));
  fs::create_symlink(root / "b.safetensors", root / "link.safetensors");
  fs::create_symlink(root / "gone.bin", root / "dangling.bin");
  fs::create_directory_symlink(root / "nested", root / "dir_link");
  ASSERT_EQ(::mkfifo((root / "pipe").c_str(), 0600), 0);

  FileStore store(context_.get_executor(), options());
  const std::string prefix = root.string() + "/";
  const auto objects = run(context_, store.list(prefix, ListDepth::one_level));
  std::vector<std::pair<std::string, std::uint64_t>> listed;
  for (const auto& object : objects) listed.emplace_back(object.key, object.size);
  const std::vector<std::pair<std::string, std::uint64_t>> expected{
      {prefix + "a.bin", 0},
      {prefix + "b.safetensors", 3},
      {prefix + "c.json", 7},
      {prefix + "link.safetensors", 3},
  };
  EXPECT_EQ(listed, expected);
  EXPECT_TRUE(store.can_list());
}

TEST_P(FileStoreTest, RecursiveListDescendsIntoDirectoriesButNotThroughLinks) {
  testing::TempDir scratch;
  const auto root = scratch.path();
  write_file(root / "config.json", random_byte_vector(4, 1));
  fs::create_directories(root / "tokenizer" / "deep");
  write_file(root / "tokenizer" / "vocab.txt", random_byte_vector(6, 2));
  write_file(root / "tokenizer" / "deep" / "empty", {});
  fs::create_directory(root / "nothing");
  fs::create_directory_symlink(root, root / "loop");

  FileStore store(context_.get_executor(), options());
  const std::string prefix = root.string() + "/";
  std::vector<std::pair<std::string, std::uint64_t>> listed;
  for (const auto& object : run(context_, store.list(prefix, ListDepth::recursive))) {
    listed.emplace_back(object.key, object.size);
  }
  const std::vector<std::pair<std::string, std::uint64_t>> expected{
      {prefix + "config.json", 4},
      {prefix + "tokenizer/deep/empty", 0},
      {prefix + "tokenizer/vocab.txt", 6},
  };
  EXPECT_EQ(listed, expected);
}

// A FileStore that leaves list_level() to ObjectStore's default, which groups the keys of a
// recursive listing, as a store whose service cannot group them would.
class RecursiveListingStore final : public testing::ForwardingStore {
 public:
  using ForwardingStore::ForwardingStore;
};

TEST_P(FileStoreTest, ListLevelGivesFilesAndSubdirectoriesAsTheDefaultGroupsThem) {
  testing::TempDir scratch;
  const auto root = scratch.path();
  write_file(root / "config.json", random_byte_vector(4, 1));
  fs::create_directories(root / "tokenizer" / "deep");
  write_file(root / "tokenizer" / "deep" / "empty", {});
  fs::create_directories(root / "TP2" / "shard0");
  write_file(root / "TP2" / "shard0" / "a.bin", random_byte_vector(3, 2));
  write_file(root / "TP2-notes.txt", random_byte_vector(2, 3));

  FileStore store(context_.get_executor(), options());
  RecursiveListingStore grouped(context_.get_executor());
  const std::string prefix = root.string() + "/";
  for (ObjectStore* lister : {static_cast<ObjectStore*>(&store), static_cast<ObjectStore*>(&grouped)}) {
    const Listing listing = run(context_, lister->list_level(prefix));
    std::vector<std::pair<std::string, std::uint64_t>> objects;
    for (const auto& object : listing.objects) objects.emplace_back(object.key, object.size);
    const std::vector<std::pair<std::string, std::uint64_t>> expected{
        {prefix + "TP2-notes.txt", 2}, {prefix + "config.json", 4}};
    EXPECT_EQ(objects, expected);
    EXPECT_EQ(listing.prefixes,
              (std::vector<std::string>{prefix + "TP2/", prefix + "tokenizer/"}));
  }
}

TEST_P(FileStoreTest, ListOfAnEmptyDirectoryIsEmpty) {
  testing::TempDir scratch;
  FileStore store(context_.get_executor(), options());
  EXPECT_TRUE(run(context_, store.list(scratch.path().string() + "/", ListDepth::one_level)).empty());
}

TEST_P(FileStoreTest, ListOfAMissingDirectoryIsNotFound) {
  FileStore store(context_.get_executor(), options());
  const std::string prefix = (directory_->path() / "absent").string() + "/";
  const auto error = thrown<NotFoundError>([&] { run(context_, store.list(prefix, ListDepth::one_level)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()), prefix + ": No such file or directory");
}

TEST_P(FileStoreTest, ListNeedsATrailingSlash) {
  FileStore store(context_.get_executor(), options());
  const std::string prefix = directory_->path().string();
  const auto error = thrown<InvalidArgument>([&] { run(context_, store.list(prefix, ListDepth::one_level)); });
  ASSERT_TRUE(error);
  EXPECT_EQ(std::string(error->what()),
            "file store listing needs a directory path ending in '/', not '" + prefix + "'");
}

TEST_P(FileStoreTest, UrlIsThePath) {
  FileStore store(context_.get_executor(), options());
  EXPECT_EQ(store.url("/data/model.safetensors"), "/data/model.safetensors");
}

TEST_P(FileStoreTest, ConcurrentReadsBeyondTheQueueDepthAllComplete) {
  auto small_queue = options();
  small_queue.queue_depth = 8;
  FileStore store(context_.get_executor(), small_queue);
  constexpr int kReads = 256;
  std::vector<std::vector<std::byte>> buffers(kReads);
  std::vector<std::uint64_t> offsets(kReads);
  std::mt19937_64 generator(11);
  std::uint64_t total = 0;
  for (int i = 0; i < kReads; ++i) {
    buffers[i].resize(1 + generator() % (i % 8 == 0 ? 6 * MiB : 64 * 1024));
    offsets[i] = generator() % (kFileSize - buffers[i].size() + 1);
    total += buffers[i].size();
  }
  std::atomic<int> failures{0};
  for (int i = 0; i < kReads; ++i) {
    asio::co_spawn(context_, store.read_range(*path_, offsets[i], buffers[i]),
                   [&](std::exception_ptr error) {
                     if (error) ++failures;
                   });
  }
  std::thread second_thread([&] { context_.run(); });
  context_.run();
  second_thread.join();

  EXPECT_EQ(failures.load(), 0);
  for (int i = 0; i < kReads; ++i) {
    const auto expected = std::span(*contents_).subspan(offsets[i], buffers[i].size());
    EXPECT_TRUE(std::equal(buffers[i].begin(), buffers[i].end(), expected.begin()))
        << "read " << i << " at " << offsets[i] << "+" << buffers[i].size();
  }
  EXPECT_EQ(store.stats().requests, std::uint64_t{kReads});
  EXPECT_EQ(store.stats().bytes, total);
}

TEST_P(FileStoreTest, StatsCountRequestsAndDeliveredBytes) {
  FileStore store(context_.get_executor(), options());
  read(store, *path_, 5, 1000);
  run(context_, store.size(*path_));
  run(context_, store.list(directory_->path().string() + "/", ListDepth::one_level));
  thrown<StorageError>([&] { read(store, *path_, kFileSize, 1); });
  const auto stats = store.stats();
  EXPECT_EQ(stats.requests, 4u);
  EXPECT_EQ(stats.bytes, 1000u);
  EXPECT_EQ(stats.retries, 0u);
  EXPECT_EQ(stats.connections, 0u);
}

TEST_P(FileStoreTest, IoModeNamesHowFilesAreRead) {
  FileStore store(context_.get_executor(), options());
  EXPECT_EQ(store.stats().io_mode,
            GetParam() == Mode::io_uring ? "io_uring" : "pread (io_uring disabled by option)");
}

TEST_P(FileStoreTest, DestroyingTheStoreWithReadsInFlightFailsOrFinishesEach) {
  constexpr int kReads = 32;
  constexpr std::size_t kLength = 3 * MiB;
  std::vector<std::vector<std::byte>> buffers(kReads, std::vector<std::byte>(kLength));
  std::vector<std::string> outcomes(kReads);
  auto store = std::make_unique<FileStore>(context_.get_executor(), options());
  for (int i = 0; i < kReads; ++i) {
    asio::co_spawn(context_, store->read_range(*path_, i * 512 * 1024, buffers[i]),
                   [&outcomes, i](std::exception_ptr error) {
                     outcomes[i] = "ok";
                     if (!error) return;
                     try {
                       std::rethrow_exception(error);
                     } catch (const std::exception& e) {
                       outcomes[i] = e.what();
                     }
                   });
  }
  // Starts every read without waiting for the reads themselves.
  context_.poll();
  store.reset();
  context_.restart();
  context_.run();

  const std::string abandoned = *path_ + ": read abandoned because the file store was destroyed";
  for (int i = 0; i < kReads; ++i) {
    if (outcomes[i] == "ok") {
      const auto expected = std::span(*contents_).subspan(i * 512 * 1024, kLength);
      EXPECT_TRUE(std::equal(buffers[i].begin(), buffers[i].end(), expected.begin()));
    } else {
      EXPECT_EQ(outcomes[i], abandoned);
    }
  }
}

TEST(FileOptionsTest, EnvironmentVariableForcesPread) {
  const ScopedEnvironment disable("TENSORSTREAM_DISABLE_IO_URING", "1");
  asio::io_context context;
  FileStore store(context.get_executor());
  EXPECT_EQ(store.stats().io_mode, "pread (io_uring disabled by TENSORSTREAM_DISABLE_IO_URING)");

  testing::TempDir scratch;
  const auto bytes = random_byte_vector(5000, 9);
  write_file(scratch.path() / "f.bin", bytes);
  std::vector<std::byte> read(4000);
  run(context, store.read_range((scratch.path() / "f.bin").string(), 1000, read));
  EXPECT_TRUE(std::equal(read.begin(), read.end(), bytes.begin() + 1000));
}

TEST(FileOptionsTest, EnvironmentVariableZeroKeepsIoUring) {
  if (const auto reason = FileStore::io_uring_unavailable_reason(); !reason.empty()) {
    GTEST_SKIP() << "io_uring is unavailable here: " << reason;
  }
  const ScopedEnvironment keep("TENSORSTREAM_DISABLE_IO_URING", "0");
  asio::io_context context;
  FileStore store(context.get_executor());
  EXPECT_EQ(store.stats().io_mode, "io_uring");
}

TEST(FileOptionsTest, InvalidOptionsAreRejected) {
  asio::io_context context;
  const auto with = [&](unsigned queue_depth, std::size_t threads) {
    FileOptions options;
    options.queue_depth = queue_depth;
    options.pread_threads = threads;
    return thrown<InvalidArgument>([&] { FileStore store(context.get_executor(), options); });
  };
  EXPECT_EQ(std::string(with(0, 2)->what()),
            "FileOptions::queue_depth must be between 1 and 4096, not 0");
  EXPECT_EQ(std::string(with(4097, 2)->what()),
            "FileOptions::queue_depth must be between 1 and 4096, not 4097");
  EXPECT_EQ(std::string(with(8, 0)->what()), "FileOptions::pread_threads must be at least 1");
}

// What Docker's default seccomp profile does: io_uring_setup fails with EPERM.
bool forbid_io_uring_setup() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog program{static_cast<unsigned short>(std::size(filter)), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program) == 0;
}

TEST(FileStoreFallbackTest, WithoutIoUringReadsWithPreadAndWarnsOnce) {
  testing::TempDir scratch;
  const auto bytes = random_byte_vector(3 * MiB, 5);
  const std::string path = (scratch.path() / "f.bin").string();
  write_file(path, bytes);
  const int status = in_child_process([&] {
    if (!forbid_io_uring_setup()) return 3;
    ::unsetenv("TENSORSTREAM_DISABLE_IO_URING");
    if (FileStore::io_uring_unavailable_reason() != "Operation not permitted") return 4;
    std::vector<std::string> warnings;
    set_log_sink([&](LogLevel level, std::string_view message) {
      if (level == LogLevel::warning) warnings.emplace_back(message);
    });
    asio::io_context context;
    FileStore first(context.get_executor());
    FileStore second(context.get_executor());
    const std::vector<std::string> expected_warnings{
        "io_uring unavailable (Operation not permitted); reading files with pread on 2 threads"};
    if (warnings != expected_warnings) return 5;
    if (first.stats().io_mode != "pread (io_uring unavailable: Operation not permitted)") return 6;
    std::vector<std::byte> read(bytes.size() - 7);
    run(context, second.read_range(path, 7, read));
    if (!std::equal(read.begin(), read.end(), bytes.begin() + 7)) return 7;
    return 0;
  });
  if (status == 3) GTEST_SKIP() << "this process may not install seccomp filters";
  EXPECT_EQ(status, 0) << "4: wrong unavailable reason, 5: wrong warnings, 6: wrong io_mode, "
                          "7: wrong bytes";
}

}  // namespace
}  // namespace tensorstream
