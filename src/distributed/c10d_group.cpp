// The c10d side of distributed streaming: libtensorstream_c10d.so, the one library of the
// project that includes c10d's headers. The streams reach it through BroadcastGroup, and the
// libraries without libtorch load it with dlopen() only when a stream asks for a rendezvous
// (distributed/join_group.cpp), so that neither they nor the command-line tool pay for libtorch
// otherwise. It links no library of the project and throws none of its exceptions: what crosses
// back is the BroadcastGroup interface, standard exceptions and plain strings.
#include "tensorstream/distributed/c10d_group.hpp"

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <ATen/Functions.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace tensorstream {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Where members tell each other of a failure. The first report wins: later ones are usually
// the others noticing the first.
constexpr const char* failure_key = "tensorstream/failure";
constexpr const char* failure_count_key = "tensorstream/failures";
// How often a member with broadcasts pending looks for a reported failure.
constexpr auto failure_poll_interval = 100ms;

// How often a member at the rendezvous looks for the others' records.
constexpr auto rendezvous_poll_interval = 20ms;

// An exception's message without the C++ stack trace c10's errors append to what().
std::string message_of(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

std::string seconds_text(std::chrono::milliseconds duration) {
  const auto ms = duration.count();
  return ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms";
}

// The broadcasts a group has started and not seen end, shared with the callbacks of their
// c10d work, which may run after the group is gone.
class PendingBroadcasts {
 public:
  using Outcome = BroadcastGroup::Outcome;
  using Completion = BroadcastGroup::Completion;

  // Records `done` for the broadcast `add` returns the id of; or, after a failure was reported,
  // calls it with that failure at once and returns nothing.
  std::optional<std::uint64_t> add(Completion& done) {
    std::unique_lock lock(mutex_);
    if (reported_) {
      const Outcome outcome = *reported_;
      lock.unlock();
      done(outcome);
      return std::nullopt;
    }
    const std::uint64_t id = next_id_++;
    pending_.emplace(id, Entry{std::move(done), false});
    changed_.notify_all();
    return id;
  }

  // The work of broadcast `id` is over: its completion runs now, unless a reported failure ran
  // it already, and goes, with the memory it keeps alive for the work.
  void finish(std::uint64_t id, Outcome outcome) {
    std::unique_lock lock(mutex_);
    // fail_all() may be calling this entry's completion outside the lock.
    changed_.wait(lock, [this] { return calling_ == 0; });
    const auto it = pending_.find(id);
    if (it == pending_.end()) return;
    Entry entry = std::move(it->second);
    pending_.erase(it);
    // Under the lock: once it is released, the last owner may destroy this object.
    changed_.notify_all();
    lock.unlock();
    if (!entry.called) entry.done(std::move(outcome));
  }

  // Fails every pending broadcast with `outcome`, and every later one. Their completions stay
  // until their work is over: the memory they keep alive is still the work's.
  void fail_all(const Outcome& outcome) {
    std::vector<Completion*> to_call;
    std::unique_lock lock(mutex_);
    if (reported_) return;
    reported_ = outcome;
    for (auto& [id, entry] : pending_) {
      if (!entry.called) {
        entry.called = true;
        to_call.push_back(&entry.done);
      }
    }
    // Called outside the lock: finish() waits for these calls (calling_) before it erases one.
    ++calling_;
    lock.unlock();
    for (Completion* done : to_call) (*done)(outcome);
    lock.lock();
    --calling_;
    changed_.notify_all();
  }

  // Waits until a broadcast is pending or `stop` holds, then returns whether any is pending.
  template <typename Stop>
  bool wait_for_pending(Stop stop) {
    std::unique_lock lock(mutex_);
    changed_.wait(lock, [&] { return stop() || !pending_.empty(); });
    return !pending_.empty() && !stop();
  }

  bool empty() {
    std::lock_guard lock(mutex_);
    return pending_.empty();
  }

  void notify() {
    std::lock_guard lock(mutex_);
    changed_.notify_all();
  }

 private:
  struct Entry {
    Completion done;
    bool called = false;
  };

  std::mutex mutex_;
  std::condition_variable changed_;
  std::unordered_map<std::uint64_t, Entry> pending_;
  std::uint64_t next_id_ = 0;
  std::optional<Outcome> reported_;
  int calling_ = 0;
};

class C10dGroup final : public BroadcastGroup {
 public:
  // `store`, where there is one, carries failure reports; `world_ranks` name the members in
  // messages by their rank in the world.
  C10dGroup(c10::intrusive_ptr<c10d::ProcessGroup> group, std::chrono::milliseconds timeout,
            c10::intrusive_ptr<c10d::Store> store = {}, std::vector<int> world_ranks = {})
      : group_(std::move(group)), timeout_(timeout), store_(std::move(store)),
        world_ranks_(std::move(world_ranks)) {
    if (store_) watcher_ = std::thread([this] { watch_for_failures(); });
  }

  ~C10dGroup() override {
    stopping_ = true;
    pending_->notify();
    if (watcher_.joinable()) watcher_.join();
    if (reporter_.joinable()) reporter_.join();
    // A group whose stream failed may have broadcasts waiting on peers that will never answer,
    // and the process group's destructor waits for them (each bounded by the timeout). The
    // caller, who already has the error, should not: the group winds down on a thread of its
    // own, and the memory of those broadcasts lives until their work ends.
    if (!pending_->empty()) {
      std::thread([group = std::move(group_), store = std::move(store_)]() mutable {
        group.reset();
        store.reset();
      }).detach();
    }
  }

  int rank() const override { return group_->getRank(); }
  int size() const override { return group_->getSize(); }

  std::string member_name(int rank) const override {
    const bool known = rank >= 0 && static_cast<std::size_t>(rank) < world_ranks_.size();
    return "rank " + std::to_string(known ? world_ranks_[static_cast<std::size_t>(rank)] : rank);
  }

  void broadcast(std::span<std::byte> bytes, int root, Completion done) override {
    const std::optional<std::uint64_t> id = pending_->add(done);
    if (!id) return;
    std::vector<at::Tensor> tensors{
        at::from_blob(bytes.data(), {static_cast<std::int64_t>(bytes.size())}, at::kByte)};
    c10d::BroadcastOptions options;
    options.rootRank = root;
    options.timeout = timeout_;
    try {
      const auto work = group_->broadcast(tensors, options);
      work->getFuture()->addCallback(
          [pending = pending_, id = *id](c10::ivalue::Future& future) {
            Outcome outcome;
            if (future.hasError()) {
              outcome.ok = false;
              outcome.failure = future.tryRetrieveErrorMessage();
            }
            pending->finish(id, std::move(outcome));
          });
    } catch (const std::exception& error) {
      pending_->finish(*id, Outcome{false, message_of(error), -1});
    }
  }

  std::vector<std::string> all_gather(const std::string& mine) override {
    const auto size = static_cast<std::size_t>(group_->getSize());
    std::vector<std::int64_t> lengths(size);
    std::int64_t my_length = static_cast<std::int64_t>(mine.size());
    gather(&my_length, sizeof my_length, lengths.data());
    const auto longest =
        static_cast<std::size_t>(*std::max_element(lengths.begin(), lengths.end()));
    std::string padded = mine;
    padded.resize(longest);
    std::string all(longest * size, '\0');
    if (longest > 0) gather(padded.data(), longest, all.data());
    std::vector<std::string> result;
    for (std::size_t i = 0; i < size; ++i) {
      result.push_back(all.substr(i * longest, static_cast<std::size_t>(lengths[i])));
    }
    return result;
  }

  // The store's calls go on a thread of their own: a member reports from its stream's strand,
  // or from the thread that stops it, and neither may wait on rank 0's store. Only a member's
  // first report can be the group's, so later ones are dropped here.
  void report_failure(const std::string& message) override {
    if (!store_ || reported_.exchange(true)) return;
    reporter_ = std::thread([this, record = std::to_string(rank()) + "\n" + message] {
      try {
        if (store_->add(failure_count_key, 1) == 1) {
          store_->set(failure_key, std::vector<std::uint8_t>(record.begin(), record.end()));
        }
      } catch (const std::exception&) {
        // The store went with rank 0: the others see the lost connections instead.
      }
    });
  }

 private:
  // Gathers `length` bytes at `mine` from every member into `all`, in rank order.
  void gather(const void* mine, std::size_t length, void* all) {
    const auto options = at::TensorOptions().dtype(at::kByte);
    std::vector<at::Tensor> input{
        at::from_blob(const_cast<void*>(mine), {static_cast<std::int64_t>(length)}, options)};
    std::vector<std::vector<at::Tensor>> output(1);
    for (int i = 0; i < group_->getSize(); ++i) {
      output[0].push_back(at::from_blob(static_cast<std::byte*>(all) + i * length,
                                        {static_cast<std::int64_t>(length)}, options));
    }
    c10d::AllgatherOptions gather_options;
    gather_options.timeout = timeout_;
    try {
      group_->allgather(output, input, gather_options)->wait();
    } catch (const std::exception& error) {
      throw std::runtime_error(message_of(error));
    }
  }

  // While broadcasts are pending, looks for another member's failure report every
  // failure_poll_interval, and fails them all, and every later one, with it.
  void watch_for_failures() {
    while (pending_->wait_for_pending([this] { return stopping_.load(); })) {
      if (auto reported = read_failure()) {
        pending_->fail_all(*reported);
        return;
      }
      std::this_thread::sleep_for(failure_poll_interval);
    }
  }

  // A record of "RANK\nMESSAGE", set once by the first member to fail.
  std::optional<Outcome> read_failure() {
    try {
      if (!store_->check({failure_key})) return std::nullopt;
      const std::vector<std::uint8_t> value = store_->get(failure_key);
      const std::string record(value.begin(), value.end());
      const std::size_t newline = record.find('\n');
      if (newline == std::string::npos) return std::nullopt;
      return Outcome{false, record.substr(newline + 1), std::stoi(record.substr(0, newline))};
    } catch (const std::exception&) {
      // Rank 0, which serves the store, has gone: its lost connections fail the broadcasts.
      return std::nullopt;
    }
  }

  c10::intrusive_ptr<c10d::ProcessGroup> group_;
  const std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Store> store_;
  const std::vector<int> world_ranks_;
  const std::shared_ptr<PendingBroadcasts> pending_ = std::make_shared<PendingBroadcasts>();
  std::atomic<bool> stopping_ = false;
  std::thread watcher_;
  std::atomic<bool> reported_ = false;
  std::thread reporter_;
};

// The device Gloo's connections bind to: GLOO_SOCKET_IFNAME's interface where set (as in
// PyTorch), the loopback address for a rendezvous on loopback, else the address the machine's
// hostname resolves to.
std::shared_ptr<::gloo::transport::Device> gloo_device(const std::string& host) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"); interface && *interface) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  }
  if (host == "localhost" || host.rfind("127.", 0) == 0) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// Waits until something accepts connections at host:port, or `deadline`. TCPStore's client
// retries a refused connection only after a second or more; members usually start within
// milliseconds of each other, and waiting here takes that second off every start.
void wait_for_listener(const std::string& host, std::uint16_t port, Clock::time_point deadline) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addresses) != 0) return;
  const std::unique_ptr<addrinfo, void (*)(addrinfo*)> owner(addresses, freeaddrinfo);
  while (Clock::now() < deadline) {
    for (const addrinfo* address = addresses; address; address = address->ai_next) {
      const int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_CLOEXEC, 0);
      if (fd < 0) continue;
      const bool accepted = ::connect(fd, address->ai_addr, address->ai_addrlen) == 0;
      ::close(fd);
      if (accepted) return;
    }
    std::this_thread::sleep_for(10ms);
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (const int rank : ranks) text += (text.empty() ? "" : ", ") + std::to_string(rank);
  return text;
}

// What a member published at the rendezvous: "WORLD_SIZE\nGROUP_KEY\nMEMBER".
struct Record {
  int world_size = 0;
  std::string group_key;
  std::string member;
};

Record parse_record(const std::vector<std::uint8_t>& value) {
  const std::string text(value.begin(), value.end());
  const std::size_t first = text.find('\n');
  const std::size_t second = text.find('\n', first + 1);
  if (first == std::string::npos || second == std::string::npos) {
    throw std::runtime_error("malformed member record '" + text + "'");
  }
  return {std::stoi(text.substr(0, first)), text.substr(first + 1, second - first - 1),
          text.substr(second + 1)};
}

// A failure the rendezvous itself found, passed on as it is.
struct RendezvousFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Publishes `message` as the group's failure, once, for the members still polling.
void publish_failure(c10d::Store& store, int rank, const std::string& message) {
  try {
    if (store.add(failure_count_key, 1) == 1) {
      const std::string record = std::to_string(rank) + "\n" + message;
      store.set(failure_key, std::vector<std::uint8_t>(record.begin(), record.end()));
    }
  } catch (const std::exception&) {
    // The store is gone with rank 0: the others see that instead.
  }
}

// The members count themselves here once they need the store no more for the rendezvous: they
// have read every record, or seen a failure. Rank 0, whose store goes when it fails, waits for
// the members present before it fails, so that each of them fails with the reason rather than
// with a lost connection.
constexpr const char* released_key = "tensorstream/released";

void release_store(c10d::Store& store, int rank) {
  if (rank == 0) return;
  try {
    store.add(released_key, 1);
  } catch (const std::exception&) {
  }
}

void wait_for_release(c10d::Store& store, int rank, int world_size,
                      std::chrono::milliseconds timeout, int gone = -1) {
  if (rank != 0) return;
  const auto deadline = Clock::now() + std::min<std::chrono::milliseconds>(timeout, 10s);
  try {
    int present = 0;
    for (int r = 1; r < world_size; ++r) {
      if (r != gone && store.check({"tensorstream/member/" + std::to_string(r)})) ++present;
    }
    while (store.add(released_key, 0) < present && Clock::now() < deadline) {
      std::this_thread::sleep_for(rendezvous_poll_interval);
    }
  } catch (const std::exception&) {
  }
}

// How a member that joined the rendezvous and then died (killed, crashed) is told from one that
// is still on its way: from the moment it claims its rank until its group is connected, each
// member adds to a counter of its own every pulse_interval, and watches the others'. A member
// whose counter moved once and then stood still for silence_limit is gone. (One that never
// arrives can only be waited for, until the timeout.)
constexpr auto pulse_interval = 200ms;
constexpr auto silence_limit = 3s;

class Liveness {
 public:
  // The first pulse is made here, before the member says it joined: one killed right after
  // saying so has moved its counter once, and is noticed when it stops. (The thread's first
  // pulse may come much later on a loaded machine.)
  Liveness(c10::intrusive_ptr<c10d::Store> store, int rank, int world_size)
      : store_(std::move(store)), rank_(rank), world_size_(world_size) {
    store_->add(key(rank_), 1);
    thread_ = std::thread([this] { run(); });
  }

  ~Liveness() { stop(); }

  // Stops pulsing: the group is connected, and its own failure reports take over.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  // The first member found gone, if any.
  std::optional<int> gone() const {
    std::lock_guard lock(mutex_);
    return gone_;
  }

 private:
  static std::string key(int rank) { return "tensorstream/alive/" + std::to_string(rank); }

  void run() {
    std::vector<std::int64_t> seen(static_cast<std::size_t>(world_size_), 0);
    std::vector<Clock::time_point> moved(static_cast<std::size_t>(world_size_), Clock::now());
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      lock.unlock();
      try {
        store_->add(key(rank_), 1);
        for (int r = 0; r < world_size_; ++r) {
          const auto i = static_cast<std::size_t>(r);
          const std::int64_t count = store_->add(key(r), 0);
          if (count != seen[i]) {
            seen[i] = count;
            moved[i] = Clock::now();
          } else if (r != rank_ && count > 0 && Clock::now() - moved[i] > silence_limit) {
            std::lock_guard found(mutex_);
            if (!gone_) gone_ = r;
          }
        }
      } catch (const std::exception&) {
        // The store went with rank 0: every other call on it fails and says so.
      }
      lock.lock();
      changed_.wait_for(lock, pulse_interval, [this] { return stopping_; });
    }
  }

  const c10::intrusive_ptr<c10d::Store> store_;
  const int rank_;
  const int world_size_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  std::optional<int> gone_;
  std::thread thread_;
};

// What a member's silence is reported as.
std::string gone_message(const std::string& where, int rank) {
  return where + ": rank " + std::to_string(rank) + " joined and then stopped answering for " +
         std::to_string(std::chrono::duration_cast<std::chrono::seconds>(silence_limit).count()) +
         " s (it was killed, crashed or hangs)";
}

// The store Gloo connects its group through: it waits for the other members' addresses, and
// would wait the whole timeout for one that died. This one waits in short steps and fails as
// soon as a member is gone.
class WatchedStore final : public c10d::Store {
 public:
  WatchedStore(c10::intrusive_ptr<c10d::Store> inner, std::shared_ptr<const Liveness> liveness,
               std::string where)
      : c10d::Store(inner->getTimeout()), inner_(std::move(inner)),
        liveness_(std::move(liveness)), where_(std::move(where)) {}

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override {
    inner_->set(key, value);
  }
  std::vector<std::uint8_t> get(const std::string& key) override {
    wait({key});
    return inner_->get(key);
  }
  std::int64_t add(const std::string& key, std::int64_t value) override {
    return inner_->add(key, value);
  }
  bool deleteKey(const std::string& key) override { return inner_->deleteKey(key); }
  bool check(const std::vector<std::string>& keys) override { return inner_->check(keys); }
  std::int64_t getNumKeys() override { return inner_->getNumKeys(); }
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override {
    const auto deadline = Clock::now() + timeout;
    while (!inner_->check(keys)) {
      if (const auto gone = liveness_->gone()) throw std::runtime_error(gone_message(where_, *gone));
      if (Clock::now() >= deadline) {
        throw std::runtime_error("the other members did not connect within " +
                                 seconds_text(timeout));
      }
      std::this_thread::sleep_for(rendezvous_poll_interval);
    }
  }

 private:
  const c10::intrusive_ptr<c10d::Store> inner_;
  const std::shared_ptr<const Liveness> liveness_;
  const std::string where_;
};

// Joins the rendezvous and connects the group. `progress`, where given, is told when this member
// has joined (for the tool's -v).
std::unique_ptr<BroadcastGroup> join(const std::string& host, std::uint16_t port, int world_size,
                                     int rank, const std::string& group_key,
                                     const std::string& member,
                                     std::chrono::milliseconds timeout,
                                     void (*progress)(const char* message)) {
  const bool ipv6 = host.find(':') != std::string::npos;
  const std::string where = "rendezvous at tcp://" + (ipv6 ? "[" + host + "]" : host) + ":" +
                            std::to_string(port);
  c10d::TCPStoreOptions store_options;
  store_options.port = port;
  store_options.isServer = rank == 0;
  store_options.numWorkers = world_size;
  store_options.waitWorkers = false;
  store_options.timeout = timeout;
  c10::intrusive_ptr<c10d::Store> store;
  // One deadline for the whole rendezvous, however its steps share it.
  const auto deadline = Clock::now() + timeout;
  const auto remaining = [&] {
    return std::max(1ms, std::chrono::duration_cast<std::chrono::milliseconds>(
                             deadline - Clock::now()));
  };
  try {
    if (rank != 0) {
      wait_for_listener(host, port, deadline);
      store_options.timeout = remaining();
    }
    store = c10::make_intrusive<c10d::TCPStore>(host, store_options);
    store->setTimeout(timeout);
  } catch (const std::exception& error) {
    throw std::runtime_error(where +
                             (rank == 0 ? ": cannot serve it: "
                                        : ": cannot reach rank 0, which serves it: ") +
                             message_of(error));
  }

  // Every member claims its rank and publishes its record, then waits for all of the world's,
  // or for a report that a member found them in disagreement. A store that goes away meanwhile
  // went with rank 0, which ended the rendezvous.
  const auto key = [](int r) { return "tensorstream/member/" + std::to_string(r); };
  std::vector<int> missing;
  std::shared_ptr<Liveness> liveness;
  try {
    if (store->add("tensorstream/claim/" + std::to_string(rank), 1) != 1) {
      const std::string duplicate = where + ": another process joined as rank " +
                                    std::to_string(rank) + " too";
      publish_failure(*store, rank, duplicate);
      wait_for_release(*store, rank, world_size, timeout);
      throw RendezvousFailure(duplicate);
    }
    liveness = std::make_shared<Liveness>(store, rank, world_size);
    const std::string mine = std::to_string(world_size) + "\n" + group_key + "\n" + member;
    store->set(key(rank), std::vector<std::uint8_t>(mine.begin(), mine.end()));
    if (progress) progress((where + ": rank " + std::to_string(rank) + " joined").c_str());
    for (;;) {
      if (store->check({failure_key})) {
        const auto value = store->get(failure_key);
        const std::string record(value.begin(), value.end());
        release_store(*store, rank);
        throw RendezvousFailure(record.substr(record.find('\n') + 1));
      }
      missing.clear();
      for (int r = 0; r < world_size; ++r) {
        if (!store->check({key(r)})) missing.push_back(r);
      }
      if (missing.empty()) break;
      if (const auto gone = liveness->gone()) {
        const std::string silent = gone_message(where, *gone);
        publish_failure(*store, rank, silent);
        wait_for_release(*store, rank, world_size, timeout, *gone);
        throw RendezvousFailure(silent);
      }
      if (Clock::now() >= deadline) {
        const std::string late = where + ": rank" + (missing.size() > 1 ? "s " : " ") +
                                 rank_list(missing) + " of " + std::to_string(world_size) +
                                 " did not join within " + seconds_text(timeout);
        publish_failure(*store, rank, late);
        wait_for_release(*store, rank, world_size, timeout);
        throw RendezvousFailure(late);
      }
      std::this_thread::sleep_for(rendezvous_poll_interval);
    }
  } catch (const RendezvousFailure&) {
    throw;
  } catch (const std::exception& error) {
    throw std::runtime_error(where + ": rank 0, which serves it, ended it (see its error): " +
                             message_of(error));
  }

  // Every member checks every record, so all of them fail alike, and reports what it found for
  // the ones whose world is larger and still wait.
  std::vector<int> group_ranks;
  std::string disagreement;
  std::vector<Record> records;
  try {
    for (int r = 0; r < world_size; ++r) records.push_back(parse_record(store->get(key(r))));
  } catch (const std::exception& error) {
    throw std::runtime_error(where + ": rank 0, which serves it, ended it (see its error): " +
                             message_of(error));
  }
  release_store(*store, rank);
  // Rank 0's store goes with it: a member alone in its group may stream and exit at once, so it
  // waits, briefly, until the others have read the records too.
  wait_for_release(*store, rank, world_size, timeout);
  for (int r = 0; r < world_size; ++r) {
    const Record& record = records[static_cast<std::size_t>(r)];
    if (record.world_size != world_size && disagreement.empty()) {
      disagreement = where + ": rank " + std::to_string(r) + " expects a world of " +
                     std::to_string(record.world_size) + " processes, rank " +
                     std::to_string(rank) + " one of " + std::to_string(world_size);
    } else if (record.member != member && disagreement.empty()) {
      disagreement = where + ": the ranks stream differently: rank " + std::to_string(r) +
                     " streams " + record.member + "; rank " + std::to_string(rank) +
                     " streams " + member;
    }
    if (record.group_key == group_key) group_ranks.push_back(r);
  }
  if (!disagreement.empty()) {
    publish_failure(*store, rank, disagreement);
    wait_for_release(*store, rank, world_size, timeout);
    throw std::runtime_error(disagreement);
  }

  const int group_rank = static_cast<int>(
      std::find(group_ranks.begin(), group_ranks.end(), rank) - group_ranks.begin());
  auto group_store =
      c10::make_intrusive<c10d::PrefixStore>("tensorstream/group/" + group_key, store);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(gloo_device(host));
  options->threads = 2;
  try {
    auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(
        c10::make_intrusive<WatchedStore>(group_store, liveness, where), group_rank,
        static_cast<int>(group_ranks.size()), options);
    liveness->stop();
    return std::make_unique<C10dGroup>(std::move(group), timeout, group_store,
                                       std::move(group_ranks));
  } catch (const std::exception& error) {
    throw std::runtime_error(where + ": connecting the group failed: " + message_of(error));
  }
}

}  // namespace

std::shared_ptr<BroadcastGroup> c10d_group(c10::intrusive_ptr<c10d::ProcessGroup> group,
                                           std::chrono::milliseconds timeout) {
  if (!group) throw std::invalid_argument("c10d_group: the process group is null");
  return std::make_shared<C10dGroup>(std::move(group), timeout);
}

}  // namespace tensorstream

/// The plugin's entry point, found by join_group() with dlsym(): a C function, so that nothing
/// but the BroadcastGroup it returns depends on the two sides agreeing on C++ details. Returns
/// a new group, to be owned by a shared_ptr, or null with the reason in `error`; `progress`, if
/// not null, hears of the steps (logged at debug level).
extern "C" __attribute__((visibility("default"))) tensorstream::BroadcastGroup*
tensorstream_c10d_join(const char* host, unsigned short port, int world_size, int rank,
                       const char* group_key, const char* member, long long timeout_ms,
                       void (*progress)(const char* message), char* error,
                       std::size_t error_size) {
  try {
    return tensorstream::join(host, port, world_size, rank, group_key, member,
                              std::chrono::milliseconds(timeout_ms), progress)
        .release();
  } catch (const std::exception& failure) {
    std::snprintf(error, error_size, "%s", tensorstream::message_of(failure).c_str());
    return nullptr;
  }
}
