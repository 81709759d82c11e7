#include "tensorstream/transfer/copy_objects.hpp"

#include <algorithm>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <exception>
#include <memory>
#include <span>

#include "async/run_on_strand.hpp"
#include "storage/write_destination.hpp"
#include "streaming/run_concurrently.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/object_writer.hpp"

namespace tensorstream {
namespace {

namespace asio = boost::asio;

// One object on its way: its writer exists from the moment its first chunk is handed out until
// its last chunk is committed (or the copy fails).
struct ObjectTransfer {
  const ObjectCopy* copy = nullptr;
  std::uint64_t chunks = 0;
  std::uint64_t chunks_written = 0;
  std::unique_ptr<ObjectWriter> writer;
};

// One chunk handed to a worker.
struct TransferChunk {
  ObjectTransfer* transfer = nullptr;
  std::uint64_t index = 0;
  std::uint64_t offset = 0;
  std::uint64_t length = 0;
};

// The state the workers share, all on one strand.
class Copier {
 public:
  Copier(ObjectStore& source, const std::vector<ObjectCopy>& copies, ObjectStore& destination,
         const CopyOptions& options)
      : source_(source), destination_(destination), options_(options) {
    transfers_.reserve(copies.size());
    for (const auto& copy : copies) {
      // A zero-byte object is one empty chunk, so that it is written (and committed) too.
      const std::uint64_t chunks =
          std::max<std::uint64_t>(1, (copy.size + options.chunk_size - 1) / options.chunk_size);
      transfers_.push_back({&copy, chunks, 0, nullptr});
    }
    write_options_.part_size = static_cast<std::size_t>(
        std::clamp<std::uint64_t>(options.chunk_size, WriteOptions::min_part_size,
                                  WriteOptions::max_part_size));
    write_options_.single_put_limit = write_options_.part_size;
    write_options_.max_parts_in_flight = options.parts_in_flight_per_object;
  }

  asio::awaitable<void> run() {
    std::exception_ptr error;
    try {
      const std::size_t workers = std::min<std::uint64_t>(options_.max_concurrency, total_chunks());
      co_await detail::run_concurrently(workers, [this](std::size_t) { return work(); });
    } catch (...) {
      error = std::current_exception();
    }
    if (!error) co_return;
    std::vector<ObjectWriter*> open;
    for (auto& transfer : transfers_) {
      if (transfer.writer) open.push_back(transfer.writer.get());
    }
    co_await detail::abort_after_failure(open);
    std::rethrow_exception(error);
  }

 private:
  std::uint64_t total_chunks() const {
    std::uint64_t total = 0;
    for (const auto& transfer : transfers_) total += transfer.chunks;
    return total;
  }

  // The next chunk in order of objects, then offsets; false when every chunk is handed out.
  // Handing them out in this order is what keeps the workers free of deadlock: a worker waits
  // only for chunks handed out before its own, whose workers wait for none after theirs.
  bool next_chunk(TransferChunk& chunk) {
    while (next_transfer_ < transfers_.size()) {
      ObjectTransfer& transfer = transfers_[next_transfer_];
      if (next_index_ < transfer.chunks) {
        const std::uint64_t offset = next_index_ * options_.chunk_size;
        const std::uint64_t left = transfer.copy->size - std::min(offset, transfer.copy->size);
        chunk = {&transfer, next_index_, offset, std::min(options_.chunk_size, left)};
        if (next_index_ == 0) {
          transfer.writer = destination_.create_writer(transfer.copy->destination_key,
                                                       write_options_);
        }
        ++next_index_;
        return true;
      }
      ++next_transfer_;
      next_index_ = 0;
    }
    return false;
  }

  asio::awaitable<void> work() {
    std::vector<std::byte> buffer;
    TransferChunk chunk;
    while (next_chunk(chunk)) {
      ObjectTransfer& transfer = *chunk.transfer;
      const ObjectCopy& copy = *transfer.copy;
      if (buffer.size() < chunk.length) buffer.resize(chunk.length);
      const auto piece = std::span(buffer).first(chunk.length);
      if (!piece.empty()) co_await source_.read_range(copy.key, chunk.offset, piece);
      if (chunk.index == 0) co_await check_size(copy);
      co_await turn_.wait([&] { return transfer.chunks_written == chunk.index; });
      co_await transfer.writer->write(piece);
      if (chunk.index + 1 == transfer.chunks) {
        co_await transfer.writer->commit();
        transfer.writer.reset();
        if (options_.on_object_copied) options_.on_object_copied(copy);
      }
      ++transfer.chunks_written;
      bytes_written_ += chunk.length;
      if (options_.on_progress) options_.on_progress(bytes_written_);
      turn_.notify_all();
    }
  }

  // After the first read, which pinned the object, its stat costs no request: a size other than
  // the listed one means it was rewritten in between, and the copy would be cut short or fail
  // past the end.
  asio::awaitable<void> check_size(const ObjectCopy& copy) {
    const ObjectStat stat = co_await source_.stat(copy.key);
    if (stat.size != copy.size) {
      throw StorageError(source_.url(copy.key),
                         "changed since it was listed (" + std::to_string(copy.size) +
                             " bytes, now " + std::to_string(stat.size) + "); copy it again");
    }
  }

  ObjectStore& source_;
  ObjectStore& destination_;
  const CopyOptions& options_;
  WriteOptions write_options_;
  std::vector<ObjectTransfer> transfers_;
  std::size_t next_transfer_ = 0;
  std::uint64_t next_index_ = 0;
  std::uint64_t bytes_written_ = 0;
  async::ConditionVariable turn_;
};

void validate_copy_options(const CopyOptions& options) {
  if (options.max_concurrency == 0) {
    throw InvalidArgument("copy: max_concurrency must be at least 1");
  }
  if (options.chunk_size == 0) throw InvalidArgument("copy: chunk_size must be at least 1 byte");
  if (options.parts_in_flight_per_object == 0) {
    throw InvalidArgument("copy: parts_in_flight_per_object must be at least 1");
  }
}

}  // namespace

asio::awaitable<void> copy_objects(ObjectStore& source, std::vector<ObjectCopy> copies,
                                   ObjectStore& destination, CopyOptions options) {
  validate_copy_options(options);
  if (copies.empty()) co_return;
  if (!destination.can_write()) {
    // The store's own refusal says why.
    destination.create_writer(copies.front().destination_key);
  }
  // The workers share the Copier, so they run on one strand even when the caller's executor has
  // several threads.
  const auto strand = asio::make_strand(co_await asio::this_coro::executor);
  Copier copier(source, copies, destination, options);
  co_await async::run_on_strand(strand, copier.run());
}

}  // namespace tensorstream
