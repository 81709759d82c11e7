#pragma once
// A TLS client stream over a beast::tcp_stream that reads ciphertext in large blocks and decrypts
// it straight into the caller's buffer.
//
// asio::ssl::stream reads the socket one TLS record at a time (17 KB) and copies every byte twice
// (its input buffer, then a BIO pair) before OpenSSL decrypts it: 125 000 system calls for 2 GB.
// Here a read takes whatever the socket holds, up to 256 KiB, and OpenSSL reads the records from
// that buffer through a BIO of our own: one copy, and a system call per 256 KiB when data
// arrives faster than it is consumed. The tcp_stream's timeouts apply to every socket operation.

#include <openssl/ssl.h>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <cstddef>
#include <memory>
#include <vector>

namespace tensorstream {

/// A client TLS connection: the async read, write and handshake operations of
/// asio::ssl::stream, for one operation of each kind at a time.
class TlsStream {
 public:
  using executor_type = boost::beast::tcp_stream::executor_type;
  using next_layer_type = boost::beast::tcp_stream;

  /// Ciphertext read from the socket at most at once.
  static constexpr std::size_t input_capacity = 256 * 1024;

  /// Makes the streams of `context` resume the session of the latest one to get a ticket from
  /// the server, instead of each doing a full handshake. A context serves one server.
  static void enable_session_resumption(boost::asio::ssl::context& context);

  /// An unconnected stream whose TLS settings (CAs, verification, versions) come from `context`,
  /// resuming its latest session where enable_session_resumption() was called.
  TlsStream(const executor_type& executor, boost::asio::ssl::context& context);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  executor_type get_executor() noexcept { return tcp_.get_executor(); }
  boost::beast::tcp_stream& next_layer() noexcept { return tcp_; }
  const boost::beast::tcp_stream& next_layer() const noexcept { return tcp_; }
  /// The OpenSSL connection, for SNI, host checks and the verification result.
  SSL* native_handle() const noexcept { return ssl_; }

  /// Performs the client handshake. Errors are asio's: an OpenSSL error in the ssl category,
  /// stream_truncated for a peer that hung up, or the socket's own.
  template <class Token>
  auto async_handshake(Token&& token) {
    return boost::asio::async_compose<Token, void(boost::beast::error_code)>(
        HandshakeOp{*this}, token, tcp_);
  }

  /// Reads at least one byte of plaintext into the first non-empty buffer of `buffers`, and as
  /// much more as has already arrived. eof once the peer closed the TLS session;
  /// stream_truncated when it hung up without closing it.
  template <class MutableBufferSequence, class Token>
  auto async_read_some(const MutableBufferSequence& buffers, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::beast::error_code, std::size_t)>(
        ReadOp{*this, first_buffer<boost::asio::mutable_buffer>(buffers)}, token, tcp_);
  }

  /// Encrypts and sends some of the first non-empty buffer of `buffers` (at most 64 KiB).
  template <class ConstBufferSequence, class Token>
  auto async_write_some(const ConstBufferSequence& buffers, Token&& token) {
    return boost::asio::async_compose<Token, void(boost::beast::error_code, std::size_t)>(
        WriteOp{*this, first_buffer<boost::asio::const_buffer>(buffers)}, token, tcp_);
  }

 private:
  enum class Phase { start, running, reading, flushing };

  // What an SSL call's result means for the operation that made it: more ciphertext is needed
  // (after flushing what OpenSSL wrote), or the operation fails with `error`.
  enum class Next { read, fail };
  struct Outcome {
    Next next = Next::read;
    boost::beast::error_code error;
  };

  template <class Buffer, class BufferSequence>
  static Buffer first_buffer(const BufferSequence& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers);
         it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const Buffer buffer(*it);
      if (buffer.size() != 0) return buffer;
    }
    return Buffer();
  }

  // Classifies the failed SSL call that returned `result`.
  Outcome outcome(int result);
  // Room at the end of the input buffer for the next socket read.
  boost::asio::mutable_buffer input_space();
  // The BIO's side: OpenSSL reads ciphertext from input_ and writes it to output_.
  static int bio_read(BIO* bio, char* out, int size);
  static int bio_write(BIO* bio, const char* data, int size);
  static long bio_control(BIO* bio, int command, long number, void* pointer);
  static int bio_create(BIO* bio);
  static BIO_METHOD* bio_method();
  // Where a context keeps its latest session (ex_data of the SSL_CTX).
  struct SessionSlot;
  static int session_slot_index();
  static SessionSlot* session_slot(SSL_CTX* context);
  static int on_new_session(SSL* ssl, SSL_SESSION* session);

  // Reads more ciphertext, or flushes what OpenSSL wrote, as `self` needs; false when neither
  // was needed. A socket read's end of stream is remembered for OpenSSL to see.
  template <class Self>
  bool start_io(Self& self, Phase& phase, bool read) {
    if (!output_.empty()) {
      phase = Phase::flushing;
      boost::asio::async_write(tcp_, boost::asio::buffer(output_), std::move(self));
      return true;
    }
    if (!read) return false;
    phase = Phase::reading;
    tcp_.async_read_some(input_space(), std::move(self));
    return true;
  }

  // Accounts for the socket operation `phase` that ended with `ec` after `bytes`; false when
  // the operation must fail with `ec`.
  bool finish_io(Phase phase, boost::beast::error_code& ec, std::size_t bytes);

  // The start of every step of an operation: the first posts itself (an operation never
  // completes inside the call that starts it); later ones account for the socket operation that
  // just ended, completing `self` with its error and `partial`. False when the step is over.
  template <class Self, class... Partial>
  bool resume(Self& self, Phase& phase, boost::beast::error_code ec, std::size_t bytes,
              Partial... partial) {
    if (phase == Phase::start) {
      phase = Phase::running;
      boost::asio::post(tcp_.get_executor(), std::move(self));
      return false;
    }
    if (!finish_io(phase, ec, bytes)) {
      self.complete(ec, partial...);
      return false;
    }
    phase = Phase::running;
    return true;
  }

  struct HandshakeOp {
    TlsStream& stream;
    Phase phase = Phase::start;
    bool connected = false;

    template <class Self>
    void operator()(Self& self, boost::beast::error_code ec = {}, std::size_t bytes = 0) {
      if (!stream.resume(self, phase, ec, bytes)) return;
      if (!connected) {
        ERR_clear_error();
        const int result = SSL_connect(stream.ssl_);
        if (result == 1) {
          connected = true;
        } else {
          const auto next = stream.outcome(result);
          if (next.next == Next::fail) return self.complete(next.error);
          if (stream.start_io(self, phase, true)) return;
        }
      }
      // The client's last flight must go out before the handshake counts as done.
      if (stream.start_io(self, phase, false)) return;
      self.complete({});
    }
  };

  struct ReadOp {
    TlsStream& stream;
    boost::asio::mutable_buffer destination;
    std::size_t total = 0;
    Phase phase = Phase::start;

    template <class Self>
    void operator()(Self& self, boost::beast::error_code ec = {}, std::size_t bytes = 0) {
      if (!stream.resume(self, phase, ec, bytes, total)) return;
      // What OpenSSL wrote while reading (a key update's answer) goes out first.
      if (stream.start_io(self, phase, false)) return;
      while (total < destination.size()) {
        ERR_clear_error();
        const auto wanted = std::min<std::size_t>(destination.size() - total, 1u << 30);
        const int result = SSL_read(stream.ssl_, static_cast<char*>(destination.data()) + total,
                                    static_cast<int>(wanted));
        if (result > 0) {
          total += static_cast<std::size_t>(result);
          continue;
        }
        const auto next = stream.outcome(result);
        if (total > 0) break;
        if (next.next == Next::fail) return self.complete(next.error, 0);
        if (stream.start_io(self, phase, true)) return;
      }
      self.complete({}, total);
    }
  };

  struct WriteOp {
    TlsStream& stream;
    boost::asio::const_buffer source;
    std::size_t written = 0;
    Phase phase = Phase::start;

    template <class Self>
    void operator()(Self& self, boost::beast::error_code ec = {}, std::size_t bytes = 0) {
      if (!stream.resume(self, phase, ec, bytes, written)) return;
      if (written == 0 && source.size() != 0) {
        ERR_clear_error();
        const auto size = std::min<std::size_t>(source.size(), 64 * 1024);
        const int result = SSL_write(stream.ssl_, source.data(), static_cast<int>(size));
        if (result <= 0) {
          const auto next = stream.outcome(result);
          if (next.next == Next::fail) return self.complete(next.error, 0);
          if (stream.start_io(self, phase, true)) return;
        } else {
          written = static_cast<std::size_t>(result);
        }
      }
      if (stream.start_io(self, phase, false)) return;
      self.complete({}, written);
    }
  };

  boost::beast::tcp_stream tcp_;
  SSL* ssl_ = nullptr;
  std::unique_ptr<std::byte[]> input_;
  std::size_t input_begin_ = 0;
  std::size_t input_end_ = 0;
  bool input_ended_ = false;
  std::vector<unsigned char> output_;
};

}  // namespace tensorstream
