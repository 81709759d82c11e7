#include "tensorstream/streaming/raw_streamer.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>
#include <boost/system/system_error.hpp>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "async/run_on_thread.hpp"
#include "base/byte_size.hpp"
#include "base/environment_setting.hpp"
#include "base/exception_message.hpp"
#include "streaming/broadcast_distribution.hpp"
#include "streaming/discovery.hpp"
#include "streaming/group_agreement.hpp"
#include "streaming/host_destination.hpp"
#include "streaming/options_check.hpp"
#include "streaming/outbox.hpp"
#include "streaming/read_owners.hpp"
#include "streaming/read_plan.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/tensor_memory.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/async/gate.hpp"
#include "tensorstream/async/library_thread.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/open_store.hpp"
#include "tensorstream/streaming/chunk_plan.hpp"

namespace tensorstream {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {

// The options as given, the ones left unset from the environment, checked.
StreamerOptions resolve(StreamerOptions options) {
  options = environment_streamer_options(std::move(options));
  detail::check_streamer_options(options);
  return options;
}

}  // namespace

// What the others hear of a member whose stream ended before its last tensor: stopped by its
// owner, or cancelled.
constexpr std::string_view closed_early = "its stream was closed before the end";

// The scheduler: discovers the files, plans their reads, and fetches them under the memory
// budget into its destination, handing each read to the distribution of a distributed stream or
// straight to the outbox. Shared by the streamer and, on a service's executor, by the run it
// started: the run may end after the streamer is gone, and must find the engine still there.
class RawStreamer::Engine : public std::enable_shared_from_this<Engine> {
 public:
  /// With `executor` the engine runs on it; without, on an io_context and threads of its own.
  Engine(std::string remote_path, StreamerOptions options, const StoreFactory& make_store,
         std::optional<asio::any_io_executor> executor)
      : remote_path_(redact_query(remote_path)),
        chunk_size_chosen_(options.chunk_size.has_value() ||
                           detail::environment_setting("CHUNK_SIZE").has_value()),
        options_(resolve(std::move(options))),
        url_(resolve_url(remote_path)),
        own_io_(executor ? std::nullopt : std::make_optional<asio::io_context>()),
        executor_(executor ? *executor : asio::any_io_executor(own_io_->get_executor())),
        strand_(asio::make_strand(executor_)),
        store_(make_store(url_, executor_)),
        chunk_size_(chunk_size_chosen_
                        ? *options_.chunk_size
                        : std::max(*options_.chunk_size, store_->preferred_read_size())),
        budget_(std::make_shared<MemoryBudget>(options_.memory_limit)),
        destination_(std::make_shared<detail::HostDestination>(
            options_.placement, std::make_shared<detail::TensorMemoryPool>(budget_))) {}

  // Broadcasts may complete after the engine is gone (the group's work can outlast a failure):
  // from here on their completions only count down for drain_broadcasts().
  ~Engine() {
    distribution_.reset();
    destination_->close();
  }

  // Whether this is a child forked after the stream was made. fork() copies none of the
  // stream's threads, and a lock one of them held stays held in the child for good.
  bool in_another_process() const { return ::getpid() != pid_; }

  // Fails at once, rather than waiting on threads that are not there.
  void check_process() const {
    if (!in_another_process()) return;
    throw StateError(remote_path_ + ": this stream was made in process " + std::to_string(pid_) +
                     ", which forked this one (" + std::to_string(::getpid()) +
                     "); its threads stayed there: make a new stream in this process");
  }

  // Starts the run; once, right after construction, when the engine is shared.
  void start() {
    // Posted to the strand, where plan() checks the budget and parks without a suspension in
    // between: a release can then never fall between the check and the wait. A release may
    // come after the engine is gone: tensors outlive it.
    budget_->set_release_listener([weak = weak_from_this()] {
      if (const auto self = weak.lock()) {
        asio::post(self->strand_, [engine = self.get(), keep = self->keep_alive()] {
          engine->memory_released_.notify_all();
        });
      }
    });
    running_.enter();
    asio::co_spawn(strand_, run(),
                   asio::bind_cancellation_slot(
                       cancellation_.slot(),
                       [this, keep = keep_alive()](std::exception_ptr error) mutable {
                         finish(error);
                         // The run's frames are torn down after this returns, and their
                         // cancellation state lives in cancellation_: the engine's last
                         // reference must go in a later handler.
                         if (keep) asio::post(strand_, [keep = std::move(keep)] {});
                       }));
    if (own_io_) {
      work_guard_.emplace(own_io_->get_executor());
      threads_.reserve(options_.io_threads);
      for (std::size_t i = 0; i < options_.io_threads; ++i) {
        threads_.emplace_back("ts-stream-io", [this] { own_io_->run(); });
      }
    }
  }

  // What a handler on the executor holds: on a service's executor, the engine, which the run
  // may need after the streamer is gone; with threads of its own, nothing, since stop() joins
  // them before the engine dies, and a handler still queued when they stop must not keep the
  // engine alive from inside its own io_context.
  std::shared_ptr<Engine> keep_alive() { return own_io_ ? nullptr : shared_from_this(); }

  // Cancels the run. With threads of its own, waits for it and joins them; on a service's
  // executor, returns at once, and the run ends on that executor.
  void stop() {
    budget_->set_release_listener({});
    report_stop();
    asio::post(strand_, [this, keep = keep_alive()] {
      cancellation_.emit(asio::cancellation_type::terminal);
    });
    if (own_io_) {
      asio::co_spawn(*own_io_, running_.close(), asio::use_future).get();
      drain_broadcasts();
    }
    // A next() still parked outlives us through its share of the outbox.
    outbox_->ready.broken(std::make_exception_ptr(
        Cancelled("the stream of " + remote_path_ + " was destroyed")));
    if (!own_io_) return;
    work_guard_.reset();
    own_io_->stop();
    for (auto& thread : threads_) thread.join();
  }

  // Tells the other members that this one stops, unless its run ended (a member that has every
  // tensor may still be broadcasting): its broadcasts and theirs wait on each other, and would
  // otherwise end only at the group's timeout, with the run that this stop() waits for still
  // waiting on them.
  void report_stop() {
    std::shared_ptr<BroadcastGroup> group;
    {
      std::lock_guard lock(outbox_->mutex);
      if (outbox_->run_ended) return;
      group = group_;
    }
    if (group) group->report_failure(std::string(closed_early));
  }

  // After the run ended, waits for the broadcasts the group's threads may still be landing in
  // tensor memory, so that the caller's placed memory is no longer written once the streamer is
  // gone. They end within the group's timeout, and at once where the group hears the failure
  // this member reported. Past that the memory stays alive, owned by the broadcasts' jobs.
  void drain_broadcasts() {
    if (!distribution_) return;
    const std::size_t left = distribution_->drain(options_.distributed.timeout);
    if (left == 0) return;
    log(LogLevel::warning, [&] {
      return "streaming " + remote_path_ + ": " + std::to_string(left) + " broadcast" +
             (left == 1 ? " is" : "s are") + " still in flight after the group's timeout of " +
             std::to_string(options_.distributed.timeout.count()) +
             " ms; the memory they land in is kept until they end";
    });
  }

  asio::awaitable<std::optional<StreamedTensor>> next() {
    check_process();
    // The frame's own references: the streamer may be destroyed while this is parked.
    const std::shared_ptr<Outbox> outbox = outbox_;
    const std::shared_ptr<detail::Destination> destination = destination_;
    const bool hand_over = options_.memory_accounting == MemoryAccounting::stream;
    Outbox::Consumer consumer(*outbox);
    std::unique_lock lock(outbox->mutex);
    check_stall_locked();
    if (outbox->has_news_locked()) {
      // A tensor is taken only on resuming from the executor: Asio completes a coroutine that
      // never suspended through one more post, during which a `next() || timer` whose timer has
      // fired would pick the timer and throw the taken tensor away.
      lock.unlock();
      const auto executor = co_await asio::this_coro::executor;
      co_await asio::post(executor, asio::use_awaitable);
      lock.lock();
    } else {
      // A cancelled wait throws with nothing taken: the tensor stays queued for the next call.
      const auto has_news = [&] { return outbox->has_news_locked(); };
      co_await outbox->ready.wait(lock, has_news);
    }
    // Cancelled after the wake-up was sent: the caller has given up on this result.
    if ((co_await asio::this_coro::cancellation_state).cancelled() != asio::cancellation_type::none) {
      throw boost::system::system_error(asio::error::operation_aborted);
    }
    consumer.done_locked();
    auto tensor = outbox->take_locked();
    lock.unlock();
    if (tensor && hand_over) destination->hand_over(tensor->data);
    co_return tensor;
  }

  std::optional<StreamedTensor> next_blocking() {
    check_process();
    Outbox& outbox = *outbox_;
    Outbox::Consumer consumer(outbox);
    std::unique_lock lock(outbox.mutex);
    check_stall_locked();
    outbox.changed.wait(lock, [&] { return outbox.has_news_locked(); });
    consumer.done_locked();
    auto tensor = outbox.take_locked();
    lock.unlock();
    if (tensor && options_.memory_accounting == MemoryAccounting::stream) {
      destination_->hand_over(tensor->data);
    }
    return tensor;
  }

  StreamStats stats() const {
    check_process();
    StreamStats stats;
    std::uint64_t reads_counted = 0;
    std::optional<std::uint64_t> store_bytes_before_reads;
    {
      std::lock_guard lock(outbox_->mutex);
      stats.files = outbox_->files_count;
      stats.tensors = outbox_->tensors_yielded;
      stats.total_tensors = outbox_->tensors_total;
      stats.bytes = outbox_->bytes_landed;
      stats.total_bytes = outbox_->bytes_total;
      const auto end = outbox_->finished_at ? *outbox_->finished_at : Clock::now();
      stats.elapsed_seconds = std::chrono::duration<double>(end - started_at_).count();
      if (outbox_->first_tensor_at) {
        stats.first_tensor_seconds =
            std::chrono::duration<double>(*outbox_->first_tensor_at - started_at_).count();
      }
      reads_counted = outbox_->read_bytes_counted;
      store_bytes_before_reads = outbox_->store_bytes_before_reads;
    }
    // Taken after the counts above, so it holds at least the bytes of the reads they counted; the
    // rest landed in reads still in flight. A coalesced run's gaps among them count until the
    // run is delivered, never beyond the total.
    const StoreStats store = store_->stats();
    if (store_bytes_before_reads && store.bytes > *store_bytes_before_reads + reads_counted) {
      const std::uint64_t arriving = store.bytes - *store_bytes_before_reads - reads_counted;
      stats.bytes += std::min(arriving, stats.total_bytes - stats.bytes);
    }
    stats.requests = store.requests;
    stats.direct_bytes = store.direct_bytes;
    stats.cached_bytes = store.cached_bytes;
    stats.source_bytes = store.bytes - std::min(store.bytes, store.cached_bytes);
    stats.retries = store.retries;
    stats.connections = store.connections;
    stats.tls_resumed = store.tls_resumed;
    stats.io_mode = store.io_mode;
    stats.chunk_size = chunk_size_;
    stats.waiting_for = store.waiting_for;
    stats.waiting_seconds = store.waiting_seconds;
    stats.peak_memory = budget_->peak();
    stats.fresh_memory = destination_->fresh_bytes();
    {
      std::lock_guard lock(outbox_->mutex);
      stats.group_size = outbox_->group_size;
      stats.broadcast_bytes = outbox_->broadcast_bytes;
    }
    return stats;
  }

  const std::string& remote_path() const { return remote_path_; }

 private:
  using Outbox = detail::Outbox;

  struct ChunkTask {
    std::shared_ptr<detail::ReadJob> job;
    Chunk chunk;
  };

  asio::awaitable<void> run() {
    if (options_.distributed.enabled()) co_await join();
    if (group_) {
      co_await run_distributed();
      co_return;
    }
    files_ = co_await detail::discover(*store_, url_, options_);
    select_tensors();
    co_await detail::run_concurrently(
        1 + *options_.max_concurrency, [this](std::size_t i) -> asio::awaitable<void> {
          return i == 0 ? plan() : fetch();
        });
  }

  // Sets group_ to the group the options give or the rendezvous makes, or leaves it empty when
  // this member is alone in its group (a tensor-parallel rank without replicas).
  asio::awaitable<void> join() {
    std::shared_ptr<BroadcastGroup> group = options_.distributed.group;
    // The blocking calls run on threads of their own.
    if (!group) {
      auto joining = async::run_on_thread([this] {
        return join_group(options_.distributed, detail::group_key(options_),
                          detail::member_description(remote_path_, options_));
      });
      group = co_await std::move(joining);
    }
    if (group->size() == 1) co_return;
    // What a broadcast's completion keeps alive on its way to the strand: on a service's
    // executor, the engine; with threads of its own, nothing, since they are joined first.
    std::optional<std::weak_ptr<void>> owner;
    if (!own_io_) owner = weak_from_this();
    distribution_ = std::make_unique<detail::BroadcastDistribution>(
        group, strand_, remote_path_,
        [this](detail::ReadJob& job, bool fetched) { deliver(job, fetched); }, std::move(owner));
    std::lock_guard lock(outbox_->mutex);  // stop() reads group_ from the caller's thread
    group_ = std::move(group);
    outbox_->group_size = group_->size();
  }

  // The version each file was pinned at by its header read, which the members compare: a
  // stat after a read asks the server nothing.
  asio::awaitable<void> note_versions() {
    for (detail::SourceFile& file : files_) {
      const ObjectStat pinned = co_await store_->stat(file.key);
      file.version = pinned.version;
    }
  }

  // Read once, broadcast to all: reads the headers, checks that every member planned the same
  // reads, and then reads its own share while broadcasting every read from its owner, in plan
  // order.
  asio::awaitable<void> run_distributed() {
    // A member that cannot read the headers tells the others in the gather below, so that
    // all of them fail alike instead of waiting for its broadcasts.
    std::exception_ptr discovery_error;
    try {
      files_ = co_await detail::discover(*store_, url_, options_);
      co_await note_versions();
      select_tensors();
    } catch (const boost::system::system_error& error) {
      if (error.code() == asio::error::operation_aborted) throw;
      discovery_error = std::current_exception();
    } catch (const std::exception&) {
      discovery_error = std::current_exception();
    }
    const std::string summary =
        detail::member_description(remote_path_, options_) + "\n" +
        (discovery_error ? "error\n" + detail::exception_message(discovery_error)
                         : detail::plan_summary(reads_));
    auto gather = async::run_on_thread([this, summary] {
      try {
        return group_->all_gather(summary);
      } catch (const std::exception& error) {
        throw Error("streaming " + remote_path_ + " on " + group_->member_name(group_->rank()) +
                    ": the members did not all report their plans: " + error.what());
      }
    });
    const std::vector<std::string> summaries = co_await std::move(gather);
    if (discovery_error) std::rethrow_exception(discovery_error);
    detail::check_agreement(summaries, *group_, remote_path_);
    owners_ = detail::assign_owners(reads_, group_->size());
    co_await detail::run_concurrently(
        2 + *options_.max_concurrency, [this](std::size_t i) -> asio::awaitable<void> {
          return i == 0 ? plan() : i == 1 ? distribution_->run() : fetch();
        });
  }

  // Discovery left each name in one file only.
  void select_tensors() {
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
    const TensorInfo* largest = nullptr;
    for (auto& file : files_) {
      file.memory_alignment = store_->memory_alignment(file.key);
      for (const auto& info : file.header.tensors) {
        ++tensors;
        bytes += info.byte_size();
        if (largest == nullptr || info.byte_size() > largest->byte_size()) largest = &info;
      }
    }
    // The budget lets such a tensor in alone rather than never: the limit then does not hold,
    // which a user who set it should hear once rather than find in the peak.
    if (largest != nullptr && !options_.placement &&
        largest->byte_size() > options_.memory_limit) {
      log(LogLevel::warning, "tensor " + largest->name + " (" +
                                 format_byte_size(largest->byte_size()) +
                                 ") is larger than the memory limit (" +
                                 format_byte_size(options_.memory_limit) +
                                 "): tensors that large are read one at a time, over the limit");
    }
    reads_ = detail::plan_reads(files_, chunk_size_, options_.memory_limit,
                                options_.read_order);
    const std::uint64_t store_bytes = store_->stats().bytes;
    std::lock_guard lock(outbox_->mutex);
    outbox_->store_bytes_before_reads = store_bytes;
    outbox_->files_count = files_.size();
    outbox_->tensors_total = tensors;
    outbox_->bytes_total = bytes;
    outbox_->discovered = true;
    if (outbox_->finished_locked()) finish_locked();
  }

  // Allocates each read's memory as the budget allows, once the workers are about to need it,
  // and queues its chunks.
  asio::awaitable<void> plan() {
    // Not as far ahead as the budget allows: memory taken early would sit unread, holding pages
    // that recycled memory could have provided, and every fresh page costs the kernel a zeroing.
    for (std::size_t index = 0; index < reads_.size(); ++index) {
      co_await chunks_taken_.wait([this] { return few_chunks_queued(); });
      detail::PlannedRead& read = reads_[index];
      detail::Destination::Claim claim = destination_->claim(read);
      const std::uint64_t bytes = claim.budget_bytes;
      // Taking the memory, counting the read in flight and clearing the blocked request happen
      // together under the outbox's lock: a stall check in between would see the memory taken
      // while the read still looks blocked, and blame the consumer for it.
      const auto reserve = [&] {
        std::lock_guard lock(outbox_->mutex);
        if (!budget_->try_acquire(bytes)) {
          outbox_->blocked_request = bytes;
          check_stall_locked();
          return false;
        }
        outbox_->blocked_request.reset();
        outbox_->jobs_in_flight += read.tensors.size();
        return true;
      };
      co_await memory_released_.wait(reserve);
      auto job = std::make_shared<detail::ReadJob>();
      job->read = std::move(read);
      const std::uint64_t length = job->read.length;
      destination_->land(*job, std::move(claim));
      job->chunks_left = chunk_count(length, chunk_size_);
      if (job->chunks_left == 0) {
        deliver(*job);
        continue;
      }
      if (distribution_) {
        job->owner = owners_[index];
        job->ready = job->owner != group_->rank();
        distribution_->add(job);
        if (job->ready) continue;
      }
      for (std::uint64_t i = 0; i < job->chunks_left; ++i) {
        chunks_.push_back({job, chunk_at(length, chunk_size_, i)});
      }
      work_available_.notify_all();
    }
    planning_done_ = true;
    work_available_.notify_all();
    if (distribution_) distribution_->planned_all();
  }

  // Whether the planner should queue the next read: fewer chunks wait than there are workers.
  bool few_chunks_queued() const { return chunks_.size() < *options_.max_concurrency; }

  // One of max_concurrency workers: takes queued chunks and reads each into its job's memory.
  asio::awaitable<void> fetch() {
    for (;;) {
      const auto has_work = [this] { return !chunks_.empty() || planning_done_; };
      co_await work_available_.wait(has_work);
      if (chunks_.empty()) co_return;
      ChunkTask task = std::move(chunks_.front());
      chunks_.pop_front();
      if (few_chunks_queued()) chunks_taken_.notify_all();
      detail::ReadJob& job = *task.job;
      const std::span<std::byte> destination(job.data.get() + task.chunk.offset,
                                             task.chunk.length);
      const detail::SourceFile& file = *job.read.file;
      co_await store_->read_range(file.key,
                                  file.header.data_start + job.read.begin + task.chunk.offset,
                                  destination);
      // A run's gaps are not tensor bytes: its tensors count when they are copied out.
      if (!job.read.coalesced()) {
        std::lock_guard lock(outbox_->mutex);
        outbox_->bytes_landed += task.chunk.length;
        outbox_->read_bytes_counted += task.chunk.length;
      }
      if (--job.chunks_left == 0) {
        if (distribution_) {
          distribution_->ready(job);
        } else {
          deliver(job);
        }
      }
    }
  }

  // Hands the job's tensors to consumers; a run's are first copied out of the scratch, which is
  // then released. `fetched`: read from the store here, rather than received from a member.
  void deliver(detail::ReadJob& job, bool fetched = true) {
    const detail::PlannedRead& read = job.read;
    std::vector<StreamedTensor> tensors;
    std::uint64_t run_bytes = 0;
    if (read.coalesced()) {
      for (std::size_t i = 0; i < read.tensors.size(); ++i) {
        const TensorInfo& info = *read.tensors[i];
        std::memcpy(job.copies[i].get(), job.data.get() + (info.begin - read.begin),
                    info.byte_size());
        run_bytes += info.byte_size();
        tensors.push_back({info, read.file->url, std::move(job.copies[i])});
      }
      job.data.reset();
    } else {
      tensors.push_back({*read.tensors.front(), read.file->url, std::move(job.data)});
    }
    std::lock_guard lock(outbox_->mutex);
    if (!fetched) {
      outbox_->broadcast_bytes += read.length;
      if (!read.coalesced()) outbox_->bytes_landed += read.length;
    }
    if (read.coalesced()) {
      outbox_->bytes_landed += run_bytes;
      if (fetched) outbox_->read_bytes_counted += read.length;
    }
    outbox_->jobs_in_flight -= tensors.size();
    outbox_->tensors_delivered += tensors.size();
    if (!outbox_->first_tensor_at) outbox_->first_tensor_at = Clock::now();
    for (auto& tensor : tensors) outbox_->tensors.push_back(std::move(tensor));
    if (outbox_->finished_locked()) finish_locked();
    outbox_->notify_locked();
  }

  // Runs on the strand when the root coroutine ends; the last thing the stream does.
  void finish(std::exception_ptr error) {
    if (distribution_) distribution_->end();
    // The others learn why from this member rather than from its lost connections.
    if (error && group_ && !(distribution_ && distribution_->failed_in_group())) {
      group_->report_failure(detail::is_operation_aborted(error)
                                 ? std::string(closed_early)
                                 : detail::exception_message(error));
    }
    {
      std::lock_guard lock(outbox_->mutex);
      if (error) outbox_->fail_locked(error);
      outbox_->run_ended = true;
      finish_locked();
    }
    running_.leave();
  }

  void finish_locked() {
    if (!outbox_->finished_at) outbox_->finished_at = Clock::now();
    outbox_->notify_locked();
  }

  // A consumer waits, nothing is loading, and the planner cannot allocate because the consumer
  // itself holds the memory: waiting would never end, so the stream fails with the reason. Only
  // MemoryAccounting::until_released counts what consumers hold.
  void check_stall_locked() {
    const Outbox& outbox = *outbox_;
    if (outbox.has_news_locked() || !outbox.consumer_waiting) return;
    if (outbox.jobs_in_flight != 0 || !outbox.blocked_request ||
        budget_->fits(*outbox.blocked_request)) {
      return;
    }
    outbox_->fail_locked(std::make_exception_ptr(Error(
        "streaming " + remote_path_ + " cannot continue: memory_limit of " +
        format_byte_size(budget_->limit()) + " is held by " + format_byte_size(budget_->used()) +
        " of yielded tensors that are still alive; release tensors after use or raise "
        "memory_limit")));
    asio::post(strand_, [this, keep = keep_alive()] {
      cancellation_.emit(asio::cancellation_type::terminal);
    });
  }

  const std::string remote_path_;
  // Whether the options or the environment set the chunk size, which the store may raise if not.
  const bool chunk_size_chosen_;
  const StreamerOptions options_;
  const Url url_;
  const Clock::time_point started_at_ = Clock::now();

  // Declared before everything bound to it, so it is destroyed last. Empty on a service's
  // executor.
  std::optional<asio::io_context> own_io_;
  asio::any_io_executor executor_;
  asio::strand<asio::any_io_executor> strand_;
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_guard_;
  std::unique_ptr<ObjectStore> store_;
  const std::uint64_t chunk_size_;  // Bytes per range read, as used.
  std::shared_ptr<MemoryBudget> budget_;
  const std::shared_ptr<detail::Destination> destination_;
  asio::cancellation_signal cancellation_;
  // The run coroutine, until its completion handler has finished; the destructor waits for it.
  async::Gate running_;

  // Touched only on the strand.
  async::ConditionVariable work_available_;
  async::ConditionVariable memory_released_;
  async::ConditionVariable chunks_taken_;
  std::vector<detail::SourceFile> files_;
  std::vector<detail::PlannedRead> reads_;
  std::deque<ChunkTask> chunks_;
  bool planning_done_ = false;

  // A distributed stream's, touched only on the strand (set before the reads start).
  std::shared_ptr<BroadcastGroup> group_;
  std::vector<int> owners_;
  std::unique_ptr<detail::BroadcastDistribution> distribution_;

  const std::shared_ptr<Outbox> outbox_ = std::make_shared<Outbox>();

  std::vector<async::LibraryThread> threads_;
  const pid_t pid_ = ::getpid();
};

namespace {

StoreFactory default_store_factory(const StoreOptions& options) {
  return [options](const Url& url, asio::any_io_executor executor) {
    return open_store(url, std::move(executor), options);
  };
}

}  // namespace

RawStreamer::RawStreamer(std::string remote_path, StreamerOptions options)
    : RawStreamer(std::move(remote_path), options, default_store_factory(options.store)) {}

RawStreamer::RawStreamer(std::string remote_path, StreamerOptions options, StoreFactory make_store)
    : engine_(std::make_shared<Engine>(std::move(remote_path), std::move(options), make_store,
                                       std::nullopt)) {
  engine_->start();
}

RawStreamer::RawStreamer(boost::asio::any_io_executor executor, std::string remote_path,
                         StreamerOptions options)
    : RawStreamer(std::move(executor), std::move(remote_path), options,
                  default_store_factory(options.store)) {}

RawStreamer::RawStreamer(boost::asio::any_io_executor executor, std::string remote_path,
                         StreamerOptions options, StoreFactory make_store)
    : engine_(std::make_shared<Engine>(std::move(remote_path), std::move(options), make_store,
                                       std::move(executor))) {
  engine_->start();
}

RawStreamer::~RawStreamer() {
  if (engine_->in_another_process()) {
    // In a forked child: stopping would wait for threads that stayed in the parent. The engine
    // is left as it is, with the memory it held, which is the parent's copy anyway.
    new std::shared_ptr<Engine>(std::move(engine_));
    return;
  }
  engine_->stop();
}

asio::awaitable<std::optional<StreamedTensor>> RawStreamer::next() { return engine_->next(); }

std::optional<StreamedTensor> RawStreamer::next_blocking() { return engine_->next_blocking(); }

StreamStats RawStreamer::stats() const { return engine_->stats(); }

const std::string& RawStreamer::remote_path() const { return engine_->remote_path(); }

}  // namespace tensorstream
