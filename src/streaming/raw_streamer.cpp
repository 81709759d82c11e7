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
#include "byte_size.hpp"
#include "exception_message.hpp"
#include "streaming/group_agreement.hpp"
#include "streaming/read_owners.hpp"
#include "streaming/discovery.hpp"
#include "streaming/options_check.hpp"
#include "streaming/read_plan.hpp"
#include "streaming/run_concurrently.hpp"
#include "streaming/tensor_memory.hpp"
#include "tensorstream/async/condition_variable.hpp"
#include "tensorstream/async/gate.hpp"
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

// Shared by the streamer and, on a service's executor, by the run it started: the run may end
// after the streamer is gone, and must find the engine still there.
// What the others hear of a member whose stream ended before its last tensor: stopped by its
// owner, or cancelled.
constexpr std::string_view closed_early = "its stream was closed before the end";

class RawStreamer::Engine : public std::enable_shared_from_this<Engine> {
 public:
  /// With `executor` the engine runs on it; without, on an io_context and threads of its own.
  Engine(std::string remote_path, StreamerOptions options, const StoreFactory& make_store,
         std::optional<asio::any_io_executor> executor)
      : remote_path_(std::move(remote_path)),
        options_(resolve(std::move(options))),
        url_(resolve_url(remote_path_)),
        own_io_(executor ? std::nullopt : std::make_optional<asio::io_context>()),
        executor_(executor ? *executor : asio::any_io_executor(own_io_->get_executor())),
        strand_(asio::make_strand(executor_)),
        store_(make_store(url_, executor_)),
        budget_(std::make_shared<MemoryBudget>(options_.memory_limit)),
        memory_(std::make_shared<detail::TensorMemoryPool>(budget_)) {}

  // Broadcasts may complete after the engine is gone (the group's work can outlast a failure):
  // from here on their completions only count down for drain_broadcasts().
  ~Engine() {
    sink_->detach();
    memory_->close();
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
        threads_.emplace_back([this] { own_io_->run(); });
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
    const std::size_t left = sink_->wait_idle(options_.distributed.timeout);
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
    const std::shared_ptr<detail::TensorMemoryPool> memory = memory_;
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
    if (tensor && hand_over) memory->detach(tensor->data);
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
      memory_->detach(tensor->data);
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
    stats.retries = store.retries;
    stats.connections = store.connections;
    stats.tls_resumed = store.tls_resumed;
    stats.io_mode = store.io_mode;
    stats.peak_memory = budget_->peak();
    {
      std::lock_guard lock(outbox_->mutex);
      stats.group_size = outbox_->group_size;
      stats.broadcast_bytes = outbox_->broadcast_bytes;
    }
    return stats;
  }

  const std::string& remote_path() const { return remote_path_; }

 private:
  /// What the stream hands to consumers, and the state behind it, under one mutex. Both next()
  /// and next_blocking() read it; each has its own way to park.
  struct Outbox {
    std::mutex mutex;
    std::condition_variable changed;  ///< Wakes next_blocking().
    async::ConditionVariable ready;   ///< Wakes next().
    std::deque<StreamedTensor> tensors;
    std::exception_ptr error;
    bool consumer_waiting = false;
    bool discovered = false;
    bool run_ended = false;  ///< finish() ran: nothing of the stream runs any more.
    std::uint64_t files_count = 0;
    std::uint64_t tensors_total = 0;
    std::uint64_t tensors_delivered = 0;
    std::uint64_t tensors_yielded = 0;
    std::uint64_t bytes_total = 0;
    /// Tensor bytes of the chunks read to the end (a coalesced run's once it is delivered).
    std::uint64_t bytes_landed = 0;
    /// Everything the reads counted in bytes_landed read, gaps included.
    std::uint64_t read_bytes_counted = 0;
    /// The store's byte count once discovery is done: what it counts on top comes from chunks.
    std::optional<std::uint64_t> store_bytes_before_reads;
    std::uint64_t jobs_in_flight = 0;
    int group_size = 1;
    std::uint64_t broadcast_bytes = 0;
    std::optional<std::uint64_t> blocked_request;
    std::optional<Clock::time_point> first_tensor_at;
    std::optional<Clock::time_point> finished_at;

    /// Marks the one pending next() or next_blocking() for its scope, however it ends. Takes the
    /// mutex itself: it lives outside the caller's lock.
    class Consumer {
     public:
      explicit Consumer(Outbox& outbox) : outbox_(outbox) {
        std::lock_guard lock(outbox.mutex);
        if (outbox.consumer_waiting) throw StateError("next() called while another is pending");
        outbox.consumer_waiting = true;
      }
      ~Consumer() {
        std::lock_guard lock(outbox_.mutex);
        if (!done_) outbox_.consumer_waiting = false;
      }

      /// Ends the wait under the outbox's lock, before the tensor is taken: once it holds the
      /// tensor the consumer is no longer waiting, and a stall check between the take and the
      /// destructor would otherwise blame it for memory it is about to release.
      void done_locked() {
        outbox_.consumer_waiting = false;
        done_ = true;
      }
      Consumer(const Consumer&) = delete;
      Consumer& operator=(const Consumer&) = delete;

     private:
      Outbox& outbox_;
      bool done_ = false;
    };

    bool finished_locked() const { return discovered && tensors_delivered == tensors_total; }

    bool has_news_locked() const { return error || !tensors.empty() || finished_locked(); }

    // Called once has_news_locked() holds.
    std::optional<StreamedTensor> take_locked() {
      if (error) std::rethrow_exception(error);
      if (tensors.empty()) return std::nullopt;
      StreamedTensor tensor = std::move(tensors.front());
      tensors.pop_front();
      ++tensors_yielded;
      return tensor;
    }

    void notify_locked() {
      changed.notify_all();
      ready.notify_all();
    }

    void fail_locked(std::exception_ptr failure) {
      if (error) return;
      error = std::move(failure);
      notify_locked();
    }
  };

  /// A read in progress: where its bytes land and the chunks still to land.
  struct Job {
    detail::PlannedRead read;
    /// The tensor's own memory; for a coalesced run, the scratch its tensors are copied out of.
    std::shared_ptr<std::byte> data;
    /// A coalesced run's tensors' own memory, in the order of read.tensors.
    std::vector<std::shared_ptr<std::byte>> copies;
    std::uint64_t chunks_left = 0;
    /// In a distributed stream: the member that reads it, and whether its bytes are here to
    /// broadcast (always, on a receiver, whose bytes the broadcast lands in).
    int owner = -1;
    bool ready = true;
  };

  /// Where a broadcast's completion, on a thread of the group's, finds the engine, and how many
  /// broadcasts may still write into tensor memory. Detached by stop(), after which completions
  /// are dropped (with the memory their jobs kept alive), though still counted.
  class BroadcastSink {
   public:
    explicit BroadcastSink(Engine* engine) : engine_(engine) {}
    void detach() {
      std::lock_guard lock(mutex_);
      engine_ = nullptr;
    }
    /// Counts a broadcast about to start; its completion must come through complete().
    void started() {
      std::lock_guard lock(mutex_);
      ++in_flight_;
    }
    void complete(std::shared_ptr<Job> job, BroadcastGroup::Outcome outcome) {
      std::lock_guard lock(mutex_);
      --in_flight_;
      idle_.notify_all();
      if (engine_ == nullptr) return;
      // On a service's executor the handler keeps the engine, which may be on its way out
      // (its destructor then waits for this lock to detach us).
      std::shared_ptr<Engine> keep;
      if (!engine_->own_io_) {
        keep = engine_->weak_from_this().lock();
        if (!keep) return;
      }
      asio::post(engine_->strand_, [engine = engine_, keep = std::move(keep), job = std::move(job),
                                    outcome = std::move(outcome)] {
        engine->broadcast_done(*job, outcome);
      });
    }
    /// Waits up to `timeout` for every started broadcast to complete; returns how many have not.
    std::size_t wait_idle(std::chrono::milliseconds timeout) {
      std::unique_lock lock(mutex_);
      idle_.wait_for(lock, timeout, [this] { return in_flight_ == 0; });
      return in_flight_;
    }

   private:
    std::mutex mutex_;
    std::condition_variable idle_;
    Engine* engine_;
    std::size_t in_flight_ = 0;
  };

  struct ChunkTask {
    std::shared_ptr<Job> job;
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
    // The blocking calls run on threads of their own, each awaited as a named local: GCC 12 may
    // destroy the temporaries of a co_await full-expression twice.
    if (!group) {
      auto joining = async::run_on_thread([this] {
        return join_group(options_.distributed, detail::group_key(options_),
                          detail::member_description(remote_path_, options_));
      });
      group = co_await std::move(joining);
    }
    if (group->size() > 1) {
      std::lock_guard lock(outbox_->mutex);  // stop() reads group_ from the caller's thread
      group_ = std::move(group);
      outbox_->group_size = group_->size();
    }
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
          return i == 0 ? plan() : i == 1 ? broadcast() : fetch();
        });
  }

  // Starts each read's broadcast in plan order once its bytes are here (on its owner) or its
  // memory is (on a receiver), with at most max_broadcasts_in_flight of them pending.
  asio::awaitable<void> broadcast() {
    for (;;) {
      co_await broadcast_changed_.wait([this] {
        return broadcast_failure_ || (outgoing_.empty() && planning_done_) ||
               (!outgoing_.empty() && outgoing_.front()->ready &&
                broadcasts_in_flight_ < max_broadcasts_in_flight);
      });
      if (broadcast_failure_) std::rethrow_exception(broadcast_failure_);
      if (outgoing_.empty()) break;
      std::shared_ptr<Job> job = std::move(outgoing_.front());
      outgoing_.pop_front();
      ++broadcasts_in_flight_;
      const std::span<std::byte> bytes(job->data.get(), job->read.length);
      const int owner = job->owner;
      sink_->started();
      // The completion keeps its share of the job, and so of its memory, for as long as the
      // group keeps it: until the group's work on the bytes has ended, which can be after a
      // failure completed it.
      group_->broadcast(bytes, owner,
                        [sink = sink_, job = std::move(job)](BroadcastGroup::Outcome outcome) {
                          sink->complete(job, std::move(outcome));
                        });
    }
    co_await broadcast_changed_.wait(
        [this] { return broadcast_failure_ || broadcasts_in_flight_ == 0; });
    if (broadcast_failure_) std::rethrow_exception(broadcast_failure_);
  }

  // On the strand, when a broadcast has ended on this member.
  void broadcast_done(Job& job, const BroadcastGroup::Outcome& outcome) {
    --broadcasts_in_flight_;
    broadcast_changed_.notify_all();
    if (broadcast_failure_ || run_over_) return;
    if (!outcome.ok) {
      broadcast_failure_ = std::make_exception_ptr(Error(detail::broadcast_failure_message(
          remote_path_, *group_, job.read, job.owner, outcome)));
      failure_from_group_ = true;
      return;
    }
    const bool received = job.owner != group_->rank();
    if (received) {
      std::lock_guard lock(outbox_->mutex);
      outbox_->broadcast_bytes += job.read.length;
      if (!job.read.coalesced()) outbox_->bytes_landed += job.read.length;
    }
    deliver(job, !received);
  }

  // Discovery left each name in one file only.
  void select_tensors() {
    std::uint64_t tensors = 0;
    std::uint64_t bytes = 0;
    for (const auto& file : files_) {
      for (const auto& info : file.header.tensors) {
        ++tensors;
        bytes += info.byte_size();
      }
    }
    reads_ = detail::plan_reads(files_, *options_.chunk_size, options_.memory_limit,
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

  // Allocates each read's memory as the budget allows and queues its chunks.
  asio::awaitable<void> plan() {
    for (std::size_t index = 0; index < reads_.size(); ++index) {
      detail::PlannedRead& read = reads_[index];
      // Placed tensors take none of the budget; a coalesced run's scratch always does.
      std::vector<std::shared_ptr<std::byte>> places(read.tensors.size());
      std::uint64_t bytes = read.memory();
      for (std::size_t i = 0; options_.placement && i < read.tensors.size(); ++i) {
        places[i] = options_.placement(*read.tensors[i], read.file->url);
        if (places[i] != nullptr) bytes -= read.tensors[i]->byte_size();
      }
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
      auto job = std::make_shared<Job>();
      job->read = std::move(read);
      const std::uint64_t length = job->read.length;
      // Each allocation gives its own bytes back to the budget: together what was acquired.
      // Placed memory is the caller's, kept alive by its owner's share for as long as it may be
      // written (by a broadcast still landing, too).
      const auto place = [&](std::size_t i) -> std::shared_ptr<std::byte> {
        if (places[i] == nullptr) return memory_->allocate(job->read.tensors[i]->byte_size());
        return std::move(places[i]);
      };
      if (job->read.coalesced()) {
        job->data = memory_->allocate(length);
        for (std::size_t i = 0; i < job->read.tensors.size(); ++i) job->copies.push_back(place(i));
      } else {
        job->data = place(0);
      }
      job->chunks_left = chunk_count(length, *options_.chunk_size);
      if (job->chunks_left == 0) {
        deliver(*job);
        continue;
      }
      if (group_) {
        job->owner = owners_[index];
        job->ready = job->owner != group_->rank();
        outgoing_.push_back(job);
        broadcast_changed_.notify_all();
        if (job->ready) continue;
      }
      for (std::uint64_t i = 0; i < job->chunks_left; ++i) {
        chunks_.push_back({job, chunk_at(length, *options_.chunk_size, i)});
      }
      work_available_.notify_all();
    }
    planning_done_ = true;
    work_available_.notify_all();
    broadcast_changed_.notify_all();
  }

  // One of max_concurrency workers: takes queued chunks and reads each into its job's memory.
  asio::awaitable<void> fetch() {
    for (;;) {
      const auto has_work = [this] { return !chunks_.empty() || planning_done_; };
      co_await work_available_.wait(has_work);
      if (chunks_.empty()) co_return;
      ChunkTask task = std::move(chunks_.front());
      chunks_.pop_front();
      Job& job = *task.job;
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
        if (group_) {
          job.ready = true;
          broadcast_changed_.notify_all();
        } else {
          deliver(job);
        }
      }
    }
  }

  // Hands the job's tensors to consumers; a run's are first copied out of the scratch, which is
  // then released. `fetched`: read from the store here, rather than received from a member.
  void deliver(Job& job, bool fetched = true) {
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
    run_over_ = true;
    // The others learn why from this member rather than from its lost connections.
    if (error && group_ && !failure_from_group_) {
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
  std::shared_ptr<MemoryBudget> budget_;
  std::shared_ptr<detail::TensorMemoryPool> memory_;
  asio::cancellation_signal cancellation_;
  // The run coroutine, until its completion handler has finished; the destructor waits for it.
  async::Gate running_;

  // Touched only on the strand.
  async::ConditionVariable work_available_;
  async::ConditionVariable memory_released_;
  std::vector<detail::SourceFile> files_;
  std::vector<detail::PlannedRead> reads_;
  std::deque<ChunkTask> chunks_;
  bool planning_done_ = false;
  bool run_over_ = false;

  // A distributed stream's, touched only on the strand (group_ is set before the reads start).
  static constexpr std::size_t max_broadcasts_in_flight = 4;
  std::shared_ptr<BroadcastGroup> group_;
  std::vector<int> owners_;
  std::deque<std::shared_ptr<Job>> outgoing_;
  async::ConditionVariable broadcast_changed_;
  std::size_t broadcasts_in_flight_ = 0;
  std::exception_ptr broadcast_failure_;
  bool failure_from_group_ = false;
  const std::shared_ptr<BroadcastSink> sink_ = std::make_shared<BroadcastSink>(this);

  const std::shared_ptr<Outbox> outbox_ = std::make_shared<Outbox>();

  std::vector<std::thread> threads_;
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
