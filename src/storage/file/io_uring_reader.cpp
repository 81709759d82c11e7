#include "storage/file/io_uring_reader.hpp"

#include <liburing.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/buffer.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <deque>
#include <mutex>
#include <vector>

#include "storage/errno_code.hpp"

namespace tensorstream {
namespace {

// Large reads are split so that no single request nears the kernel's 2 GiB limit per read and
// pieces of one huge read can run on several kernel workers. Smaller pieces did not measurably
// help: a buffered read is a memory copy, and the streamer keeps many reads in flight anyway.
constexpr std::size_t kPieceSize = std::size_t{16} << 20;

// Reads up to this size are copied inside the submit call, which is the fastest way to serve a
// small read from the page cache. Larger ones go to the kernel's io-wq workers (IOSQE_ASYNC):
// copied inline they would hold the executor's thread, and the ring's mutex with it, for
// milliseconds.
constexpr std::size_t kInlineLimit = std::size_t{256} << 10;

// A ring whose completions are signalled on an eventfd; both are released by the destructor.
struct RingSetup {
  io_uring ring{};
  int eventfd = -1;
  bool ring_ready = false;

  RingSetup() = default;
  RingSetup(const RingSetup&) = delete;
  RingSetup& operator=(const RingSetup&) = delete;
  ~RingSetup() {
    if (ring_ready) io_uring_queue_exit(&ring);
    if (eventfd >= 0) ::close(eventfd);
  }

  boost::system::error_code create(unsigned entries) {
    if (const int rc = io_uring_queue_init(entries, &ring, 0); rc < 0) return errno_code(-rc);
    ring_ready = true;
    eventfd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (eventfd < 0) return errno_code(errno);
    if (const int rc = io_uring_register_eventfd(&ring, eventfd); rc < 0) return errno_code(-rc);
    return {};
  }
};

}  // namespace

class IoUringReader::Ring : public std::enable_shared_from_this<Ring> {
 public:
  Ring(boost::asio::any_io_executor executor, unsigned queue_depth)
      : executor_(std::move(executor)), eventfd_(executor_), depth_(queue_depth) {}

  boost::system::error_code open() {
    if (auto error = setup_.create(depth_)) return error;
    boost::system::error_code error;
    eventfd_.assign(setup_.eventfd, error);
    if (error) return error;
    // The descriptor now closes the eventfd itself.
    setup_.eventfd = -1;
    return {};
  }

  const boost::asio::any_io_executor& executor() const { return executor_; }

  void start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) {
    if (read.destination.empty()) {
      ReadCompletion::finish(std::move(completion), {});
      return;
    }
    auto request = std::make_unique<Request>();
    request->completion = std::move(completion);
    request->direct_refused = read.direct_refused;
    for (ReadPiece& each : split_read(read, kPieceSize)) {
      request->pieces.push_back(Piece{request.get(), std::move(each)});
    }
    request->unfinished = request->pieces.size();
    Finished finished;
    {
      std::lock_guard lock(mutex_);
      if (closed_) {
        request->error = boost::asio::error::operation_aborted;
        finished.push_back(request.release());
      } else {
        for (auto& each : request.release()->pieces) pending_.push_back(&each);
        submit_locked();
        // Reads served from the page cache often complete inside the submit call itself.
        reap_locked(finished);
        if (in_flight_ > 0 && !watching_) watch_locked();
      }
    }
    finish(finished);
  }

  void close() {
    Finished finished;
    {
      std::lock_guard lock(mutex_);
      closed_ = true;
      for (Piece* piece : pending_) {
        piece_done(*piece, boost::asio::error::operation_aborted, finished);
      }
      pending_.clear();
      if (in_flight_ > 0) {
        if (io_uring_sqe* sqe = io_uring_get_sqe(&setup_.ring)) {
          io_uring_prep_cancel64(sqe, 0, IORING_ASYNC_CANCEL_ANY);
          io_uring_sqe_set_data(sqe, nullptr);
        }
        // Also hands the kernel any reads a refused submit left behind, or the wait never ends.
        submit_locked();
      }
      while (in_flight_ > 0) {
        io_uring_cqe* cqe = nullptr;
        const int rc = io_uring_wait_cqe(&setup_.ring, &cqe);
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN) break;
        reap_locked(finished);
      }
      boost::system::error_code ignored;
      eventfd_.cancel(ignored);
    }
    finish(finished);
  }

 private:
  struct Request;
  struct Piece {
    Request* request;
    ReadPiece read;
  };
  struct Request {
    std::unique_ptr<ReadCompletion> completion;
    std::vector<Piece> pieces;
    std::size_t unfinished = 0;
    boost::system::error_code error;
    bool* direct_refused = nullptr;
  };
  using Finished = std::vector<Request*>;

  // Called with mutex_ held. The eventfd is watched only while reads are in the kernel, so that
  // an idle store does not keep io_context::run() from returning.
  void watch_locked() {
    watching_ = true;
    eventfd_.async_read_some(boost::asio::buffer(&eventfd_value_, sizeof eventfd_value_),
                             [self = shared_from_this()](const boost::system::error_code&,
                                                         std::size_t) { self->on_eventfd(); });
  }

  void on_eventfd() {
    Finished finished;
    {
      std::lock_guard lock(mutex_);
      watching_ = false;
      if (closed_) return;
      reap_locked(finished);
      if (in_flight_ > 0) watch_locked();
    }
    finish(finished);
  }

  // Requests beyond queue_depth wait in pending_ rather than overflowing the completion queue.
  void submit_locked() {
    while (in_flight_ < depth_ && !pending_.empty()) {
      io_uring_sqe* sqe = io_uring_get_sqe(&setup_.ring);
      if (sqe == nullptr) break;
      Piece* piece = pending_.front();
      pending_.pop_front();
      const ReadPiece& read = piece->read;
      io_uring_prep_read(sqe, read.kernel_fd(), read.kernel_data(),
                         static_cast<unsigned>(read.kernel_length()), read.kernel_offset());
      // A direct read only starts the device's transfer; a worker would add a thread hop.
      if (!read.is_direct() && read.kernel_length() > kInlineLimit) sqe->flags |= IOSQE_ASYNC;
      io_uring_sqe_set_data(sqe, piece);
      ++in_flight_;
    }
    // A refused submit (EAGAIN, EBUSY) leaves the entries in the ring; the next start() or
    // completion submits them again.
    while (io_uring_sq_ready(&setup_.ring) > 0 && io_uring_submit(&setup_.ring) == -EINTR) {
    }
  }

  void reap_locked(Finished& finished) {
    bool reaped = false;
    for (;;) {
      io_uring_cqe* cqe = nullptr;
      if (io_uring_peek_cqe(&setup_.ring, &cqe) != 0 || cqe == nullptr) break;
      auto* piece = static_cast<Piece*>(io_uring_cqe_get_data(cqe));
      const int result = cqe->res;
      io_uring_cqe_seen(&setup_.ring, cqe);
      if (piece == nullptr) continue;  // the cancellation request of close()
      --in_flight_;
      reaped = true;
      on_result(*piece, result, finished);
    }
    if (reaped && !closed_) submit_locked();
  }

  void on_result(Piece& piece, int result, Finished& finished) {
    if (result == -EAGAIN || result == -EINTR) {
      retry(piece, finished);
    } else if (result == -EINVAL && piece.read.is_direct()) {
      piece.read.read_buffered();
      if (piece.request->direct_refused != nullptr) *piece.request->direct_refused = true;
      retry(piece, finished);
    } else if (result == -ECANCELED) {
      piece_done(piece, boost::asio::error::operation_aborted, finished);
    } else if (result < 0) {
      piece_done(piece, errno_code(-result), finished);
    } else {
      switch (piece.read.advance(static_cast<std::size_t>(result))) {
        case ReadPiece::Progress::done:
          piece_done(piece, {}, finished);
          break;
        case ReadPiece::Progress::again:
          retry(piece, finished);
          break;
        case ReadPiece::Progress::eof:
          piece_done(piece, boost::asio::error::eof, finished);
          break;
      }
    }
  }

  void retry(Piece& piece, Finished& finished) {
    if (closed_) {
      piece_done(piece, boost::asio::error::operation_aborted, finished);
    } else {
      pending_.push_front(&piece);
    }
  }

  static void piece_done(Piece& piece, boost::system::error_code error, Finished& finished) {
    Request& request = *piece.request;
    if (error && !request.error) request.error = error;
    if (--request.unfinished == 0) finished.push_back(&request);
  }

  // Outside mutex_: a completion may run arbitrary code when its executor is inline.
  static void finish(Finished& finished) {
    for (Request* raw : finished) {
      std::unique_ptr<Request> request(raw);
      ReadCompletion::finish(std::move(request->completion), request->error);
    }
  }

  boost::asio::any_io_executor executor_;
  RingSetup setup_;
  boost::asio::posix::stream_descriptor eventfd_;
  std::uint64_t eventfd_value_ = 0;
  const unsigned depth_;
  std::mutex mutex_;
  std::deque<Piece*> pending_;
  unsigned in_flight_ = 0;
  bool watching_ = false;
  bool closed_ = false;
};

std::unique_ptr<IoUringReader> IoUringReader::create(boost::asio::any_io_executor executor,
                                                     unsigned queue_depth,
                                                     boost::system::error_code& error) {
  auto ring = std::make_shared<Ring>(std::move(executor), queue_depth);
  error = ring->open();
  if (error) return nullptr;
  return std::unique_ptr<IoUringReader>(new IoUringReader(std::move(ring)));
}

boost::system::error_code IoUringReader::probe() {
  RingSetup setup;
  return setup.create(1);
}

IoUringReader::~IoUringReader() { ring_->close(); }

void IoUringReader::start(const FileRead& read, std::unique_ptr<ReadCompletion> completion) {
  ring_->start(read, std::move(completion));
}

boost::asio::any_io_executor IoUringReader::executor() const { return ring_->executor(); }

}  // namespace tensorstream
