#include "tensorstream/streaming/raw_streamer.hpp"

#include <algorithm>
#include <atomic>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "byte_size.hpp"
#include "streaming/discovery.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/signal.hpp"
#include "streaming/tensor_memory.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/model/model_loader_config.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/chunk_plan.hpp"

namespace tensorstream {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

void validate(const StreamerOptions& options) {
  if (*options.chunk_size == 0) throw InvalidArgument("chunk_size must be at least 1 byte");
  if (*options.max_concurrency == 0) throw InvalidArgument("max_concurrency must be at least 1");
  if (options.io_threads == 0) throw InvalidArgument("io_threads must be at least 1");
  if (options.memory_limit == 0) throw InvalidArgument("memory_limit must be at least 1 byte");
  if (options.tensor_parallel_size < 1) {
    throw InvalidArgument("tensor_parallel_size must be at least 1, not " +
                          std::to_string(options.tensor_parallel_size));
  }
  if (options.rank < 0 || options.rank >= options.tensor_parallel_size) {
    throw InvalidArgument("rank " + std::to_string(options.rank) + " is outside [0, " +
                          std::to_string(options.tensor_parallel_size) + ")");
  }
}

// The options as given, the ones left unset from the environment, checked.
StreamerOptions resolve(StreamerOptions options) {
  options = ModelLoaderConfig::from_environment().streamer_options(std::move(options));
  validate(options);
  return options;
}

}  // namespace

class RawStreamer::Engine {
 public:
  Engine(std::string remote_path, StreamerOptions options, const StoreFactory& make_store)
      : remote_path_(std::move(remote_path)),
        options_(resolve(std::move(options))),
        url_(detail::resolve_url(remote_path_)),
        strand_(asio::make_strand(io_)),
        work_guard_(io_.get_executor()),
        store_(make_store(url_, io_.get_executor())),
        budget_(std::make_shared<MemoryBudget>(options_.memory_limit)),
        memory_(std::make_shared<detail::TensorMemoryPool>(budget_)),
        work_available_(strand_),
        memory_released_(strand_) {
    budget_->set_release_listener([this] {
      asio::post(strand_, [this] { memory_released_.notify_all(); });
    });
    running_ = true;
    asio::co_spawn(strand_, run(),
                   asio::bind_cancellation_slot(cancellation_.slot(),
                                                [this](std::exception_ptr error) { finish(error); }));
    threads_.reserve(options_.io_threads);
    for (std::size_t i = 0; i < options_.io_threads; ++i) threads_.emplace_back([this] { io_.run(); });
  }

  ~Engine() {
    budget_->set_release_listener({});
    asio::post(strand_, [this] { cancellation_.emit(asio::cancellation_type::terminal); });
    {
      std::unique_lock lock(mutex_);
      changed_.wait(lock, [this] { return !running_; });
      if (waiter_) {
        complete_waiter_locked(std::make_exception_ptr(Cancelled("the stream of " + remote_path_ +
                                                                 " was destroyed")),
                               std::nullopt);
      }
    }
    work_guard_.reset();
    io_.stop();
    for (auto& thread : threads_) thread.join();
    memory_->close();
  }

  asio::awaitable<std::optional<StreamedTensor>> next() {
    return asio::async_initiate<const asio::use_awaitable_t<>&,
                                void(std::exception_ptr, std::optional<StreamedTensor>)>(
        [this](auto handler) {
          const auto executor = asio::get_associated_executor(handler);
          auto tracked = asio::prefer(executor, asio::execution::outstanding_work.tracked);
          auto shared = std::make_shared<decltype(handler)>(std::move(handler));
          Waiter waiter = [shared, tracked](std::exception_ptr error,
                                            std::optional<StreamedTensor> tensor) {
            asio::post(tracked, [shared, error, tensor = std::move(tensor)]() mutable {
              (*shared)(error, std::move(tensor));
            });
          };
          std::lock_guard lock(mutex_);
          if (error_) return waiter(error_, std::nullopt);
          if (!ready_.empty()) return waiter(nullptr, pop_ready_locked());
          if (finished_locked()) return waiter(nullptr, std::nullopt);
          if (waiter_ || blocking_waiter_) {
            return waiter(std::make_exception_ptr(StateError("next() called while another is pending")),
                          std::nullopt);
          }
          waiter_ = std::move(waiter);
          check_stall_locked();
        },
        asio::use_awaitable);
  }

  std::optional<StreamedTensor> next_blocking() {
    std::unique_lock lock(mutex_);
    if (waiter_ || blocking_waiter_) throw StateError("next() called while another is pending");
    for (;;) {
      if (error_) std::rethrow_exception(error_);
      if (!ready_.empty()) return pop_ready_locked();
      if (finished_locked()) return std::nullopt;
      blocking_waiter_ = true;
      check_stall_locked();
      if (!error_) changed_.wait(lock);
      blocking_waiter_ = false;
    }
  }

  StreamStats stats() const {
    StreamStats stats;
    const StoreStats store = store_->stats();
    std::lock_guard lock(mutex_);
    stats.files = files_count_;
    stats.tensors = tensors_yielded_;
    stats.total_tensors = tensors_total_;
    stats.bytes = bytes_landed_.load();
    stats.total_bytes = bytes_total_;
    const auto end = finished_at_ ? *finished_at_ : Clock::now();
    stats.elapsed_seconds = std::chrono::duration<double>(end - started_at_).count();
    if (first_tensor_at_) {
      stats.first_tensor_seconds =
          std::chrono::duration<double>(*first_tensor_at_ - started_at_).count();
    }
    stats.requests = store.requests;
    stats.retries = store.retries;
    stats.connections = store.connections;
    stats.io_mode = store.io_mode;
    stats.peak_memory = budget_->peak();
    return stats;
  }

  const std::string& remote_path() const { return remote_path_; }

 private:
  using Waiter = std::function<void(std::exception_ptr, std::optional<StreamedTensor>)>;

  /// A tensor being loaded: its memory and the chunks still to land.
  struct Job {
    const detail::SafetensorsFile* file = nullptr;
    const TensorInfo* info = nullptr;
    std::shared_ptr<std::byte> data;
    std::uint64_t chunks_left = 0;
  };

  struct ChunkTask {
    std::shared_ptr<Job> job;
    Chunk chunk;
  };

  asio::awaitable<void> run() {
    files_ = co_await detail::discover(*store_, url_, options_);
    select_tensors();
    co_await detail::run_concurrently(
        1 + *options_.max_concurrency, [this](std::size_t i) -> asio::awaitable<void> {
          return i == 0 ? plan() : fetch();
        });
  }

  // Discovery left each name in one file only.
  void select_tensors() {
    std::uint64_t bytes = 0;
    for (const auto& file : files_) {
      for (const auto& info : file.header.tensors) {
        selected_.push_back({&file, &info});
        bytes += info.byte_size();
      }
    }
    // Smallest first: the first tensors are ready within a round trip or two, and a service can
    // start copying while the large ones are still on the wire.
    std::stable_sort(selected_.begin(), selected_.end(), [](const auto& a, const auto& b) {
      return a.second->byte_size() < b.second->byte_size();
    });
    std::lock_guard lock(mutex_);
    files_count_ = files_.size();
    tensors_total_ = selected_.size();
    bytes_total_ = bytes;
    discovered_ = true;
    if (finished_locked()) wake_finished_locked();
  }

  // Allocates each tensor's memory as the budget allows and queues its chunks.
  asio::awaitable<void> plan() {
    for (const auto& [file, info] : selected_) {
      const std::uint64_t bytes = info->byte_size();
      while (!budget_->try_acquire(bytes)) {
        {
          std::lock_guard lock(mutex_);
          blocked_request_ = bytes;
          check_stall_locked();
        }
        co_await memory_released_.wait();
        std::lock_guard lock(mutex_);
        blocked_request_.reset();
        if (error_) co_return;
      }
      auto job = std::make_shared<Job>();
      job->file = file;
      job->info = info;
      job->data = memory_->allocate(bytes);
      job->chunks_left = chunk_count(bytes, *options_.chunk_size);
      {
        std::lock_guard lock(mutex_);
        ++jobs_in_flight_;
      }
      if (job->chunks_left == 0) {
        deliver(*job);
        continue;
      }
      for (std::uint64_t i = 0; i < job->chunks_left; ++i) {
        chunks_.push_back({job, chunk_at(bytes, *options_.chunk_size, i)});
      }
      work_available_.notify_all();
    }
    planning_done_ = true;
    work_available_.notify_all();
  }

  // One of max_concurrency workers: takes queued chunks and reads each into its tensor's memory.
  asio::awaitable<void> fetch() {
    for (;;) {
      while (chunks_.empty() && !planning_done_) {
        co_await work_available_.wait();
        if ((co_await asio::this_coro::cancellation_state).cancelled() !=
            asio::cancellation_type::none) {
          co_return;
        }
      }
      if (chunks_.empty()) co_return;
      ChunkTask task = std::move(chunks_.front());
      chunks_.pop_front();
      Job& job = *task.job;
      const std::span<std::byte> destination(job.data.get() + task.chunk.offset,
                                             task.chunk.length);
      co_await store_->read_range(job.file->key,
                                  job.file->header.data_start + job.info->begin + task.chunk.offset,
                                  destination);
      bytes_landed_ += task.chunk.length;
      if (--job.chunks_left == 0) deliver(job);
    }
  }

  void deliver(Job& job) {
    StreamedTensor tensor{*job.info, job.file->url, std::move(job.data)};
    std::lock_guard lock(mutex_);
    --jobs_in_flight_;
    ++tensors_delivered_;
    if (!first_tensor_at_) first_tensor_at_ = Clock::now();
    if (waiter_) {
      ++tensors_yielded_;
      complete_waiter_locked(nullptr, std::move(tensor));
    } else {
      ready_.push_back(std::move(tensor));
    }
    if (finished_locked()) wake_finished_locked();
    changed_.notify_all();
  }

  // Runs on the strand when the root coroutine ends.
  void finish(std::exception_ptr error) {
    std::lock_guard lock(mutex_);
    if (error && !error_) {
      error_ = error;
      if (waiter_) complete_waiter_locked(error_, std::nullopt);
    }
    if (!finished_at_) finished_at_ = Clock::now();
    running_ = false;
    changed_.notify_all();
  }

  // A consumer waits, nothing is loading, and the planner cannot allocate because the consumer
  // itself holds the memory: waiting would never end, so the stream fails with the reason.
  void check_stall_locked() {
    if (error_ || !ready_.empty() || finished_locked()) return;
    if (!waiter_ && !blocking_waiter_) return;
    if (jobs_in_flight_ != 0 || !blocked_request_ || budget_->fits(*blocked_request_)) return;
    error_ = std::make_exception_ptr(Error(
        "streaming " + remote_path_ + " cannot continue: memory_limit of " +
        format_byte_size(budget_->limit()) + " is held by " + format_byte_size(budget_->used()) +
        " of yielded tensors that are still alive; release tensors after use or raise "
        "memory_limit"));
    if (waiter_) complete_waiter_locked(error_, std::nullopt);
    changed_.notify_all();
    asio::post(strand_, [this] { cancellation_.emit(asio::cancellation_type::terminal); });
  }

  bool finished_locked() const { return discovered_ && tensors_delivered_ == tensors_total_; }

  void wake_finished_locked() {
    if (!finished_at_) finished_at_ = Clock::now();
    if (waiter_ && ready_.empty()) complete_waiter_locked(nullptr, std::nullopt);
  }

  StreamedTensor pop_ready_locked() {
    StreamedTensor tensor = std::move(ready_.front());
    ready_.pop_front();
    ++tensors_yielded_;
    return tensor;
  }

  void complete_waiter_locked(std::exception_ptr error, std::optional<StreamedTensor> tensor) {
    Waiter waiter = std::move(waiter_);
    waiter_ = nullptr;
    waiter(error, std::move(tensor));
  }

  const std::string remote_path_;
  const StreamerOptions options_;
  const Url url_;
  const Clock::time_point started_at_ = Clock::now();

  // Declared before everything bound to it, so it is destroyed last.
  asio::io_context io_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::executor_work_guard<asio::io_context::executor_type> work_guard_;
  std::unique_ptr<ObjectStore> store_;
  std::shared_ptr<MemoryBudget> budget_;
  std::shared_ptr<detail::TensorMemoryPool> memory_;
  asio::cancellation_signal cancellation_;

  // Touched only on the strand.
  detail::Signal work_available_;
  detail::Signal memory_released_;
  std::vector<detail::SafetensorsFile> files_;
  std::vector<std::pair<const detail::SafetensorsFile*, const TensorInfo*>> selected_;
  std::deque<ChunkTask> chunks_;
  bool planning_done_ = false;
  std::atomic<std::uint64_t> bytes_landed_{0};

  // Shared between the strand and consumers.
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<StreamedTensor> ready_;
  std::exception_ptr error_;
  Waiter waiter_;
  bool blocking_waiter_ = false;
  bool running_ = false;
  bool discovered_ = false;
  std::uint64_t files_count_ = 0;
  std::uint64_t tensors_total_ = 0;
  std::uint64_t tensors_delivered_ = 0;
  std::uint64_t tensors_yielded_ = 0;
  std::uint64_t bytes_total_ = 0;
  std::uint64_t jobs_in_flight_ = 0;
  std::optional<std::uint64_t> blocked_request_;
  std::optional<Clock::time_point> first_tensor_at_;
  std::optional<Clock::time_point> finished_at_;

  std::vector<std::thread> threads_;
};

RawStreamer::RawStreamer(std::string remote_path, StreamerOptions options)
    : RawStreamer(std::move(remote_path), options,
                  [store_options = options.store](const Url& url, asio::any_io_executor executor) {
                    return open_store(url, std::move(executor), store_options);
                  }) {}

RawStreamer::RawStreamer(std::string remote_path, StreamerOptions options, StoreFactory make_store)
    : engine_(std::make_unique<Engine>(std::move(remote_path), std::move(options), make_store)) {}

RawStreamer::~RawStreamer() = default;

asio::awaitable<std::optional<StreamedTensor>> RawStreamer::next() { return engine_->next(); }

std::optional<StreamedTensor> RawStreamer::next_blocking() { return engine_->next_blocking(); }

StreamStats RawStreamer::stats() const { return engine_->stats(); }

const std::string& RawStreamer::remote_path() const { return engine_->remote_path(); }

}  // namespace tensorstream
