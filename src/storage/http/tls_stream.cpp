#include "storage/http/tls_stream.hpp"

#include <openssl/bio.h>
#include <openssl/err.h>

#include <algorithm>
#include <boost/asio/ssl/error.hpp>
#include <cstring>
#include <limits>
#include <mutex>
#include <stdexcept>

namespace tensorstream {

namespace asio = boost::asio;
namespace beast = boost::beast;

struct TlsStream::SessionSlot {
  std::mutex mutex;
  SSL_SESSION* session = nullptr;  // Owned.
};

int TlsStream::session_slot_index() {
  static const int index = SSL_CTX_get_ex_new_index(
      0, nullptr, nullptr, nullptr,
      [](void*, void* slot, CRYPTO_EX_DATA*, int, long, void*) {
        auto* owned = static_cast<SessionSlot*>(slot);
        if (owned == nullptr) return;
        SSL_SESSION_free(owned->session);
        delete owned;
      });
  return index;
}

TlsStream::SessionSlot* TlsStream::session_slot(SSL_CTX* context) {
  return static_cast<SessionSlot*>(SSL_CTX_get_ex_data(context, session_slot_index()));
}

void TlsStream::enable_session_resumption(asio::ssl::context& context) {
  SSL_CTX* native = context.native_handle();
  if (session_slot(native) != nullptr) return;
  auto slot = std::make_unique<SessionSlot>();
  if (SSL_CTX_set_ex_data(native, session_slot_index(), slot.get()) != 1) return;
  slot.release();
  // Sessions go to the slot only: OpenSSL's client cache would never be looked up anyway.
  SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(native, on_new_session);
}

// TLS 1.3 tickets arrive after the handshake, while the first response is read.
int TlsStream::on_new_session(SSL* ssl, SSL_SESSION* session) {
  SessionSlot* slot = session_slot(SSL_get_SSL_CTX(ssl));
  if (slot == nullptr) return 0;
  std::lock_guard lock(slot->mutex);
  SSL_SESSION_free(slot->session);
  slot->session = session;
  return 1;
}

TlsStream::TlsStream(const executor_type& executor, asio::ssl::context& context)
    : tcp_(executor),
      ssl_(SSL_new(context.native_handle())),
      input_(std::make_unique<std::byte[]>(input_capacity)) {
  if (ssl_ == nullptr) throw std::bad_alloc();
  BIO* bio = BIO_new(bio_method());
  if (bio == nullptr) {
    SSL_free(ssl_);
    throw std::bad_alloc();
  }
  BIO_set_data(bio, this);
  SSL_set_bio(ssl_, bio, bio);
  SSL_set_connect_state(ssl_);
  // OpenSSL then takes all the buffered ciphertext it can hold per BIO read, not a record header
  // and then its body.
  SSL_set_read_ahead(ssl_, 1);
  SSL_set_mode(ssl_, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (SessionSlot* slot = session_slot(context.native_handle())) {
    std::lock_guard lock(slot->mutex);
    if (slot->session != nullptr) SSL_set_session(ssl_, slot->session);
  }
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::Outcome TlsStream::outcome(int result) {
  switch (SSL_get_error(ssl_, result)) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
      return {Next::read, {}};
    case SSL_ERROR_ZERO_RETURN:
      return {Next::fail, asio::error::eof};
    case SSL_ERROR_SYSCALL:
      // Only the end of the input makes our BIO fail without an error of its own.
      return {Next::fail, asio::ssl::error::stream_truncated};
    default:
      break;
  }
  const unsigned long error = ERR_get_error();
  if (input_ended_ && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    return {Next::fail, asio::ssl::error::stream_truncated};
  }
  // As asio::ssl::stream reports it, so that messages name OpenSSL's reason.
  return {Next::fail, beast::error_code(static_cast<int>(error), asio::error::get_ssl_category())};
}

asio::mutable_buffer TlsStream::input_space() {
  if (input_begin_ == input_end_) {
    input_begin_ = input_end_ = 0;
  } else if (input_begin_ > 0) {
    std::memmove(input_.get(), input_.get() + input_begin_, input_end_ - input_begin_);
    input_end_ -= input_begin_;
    input_begin_ = 0;
  }
  return asio::buffer(input_.get() + input_end_, input_capacity - input_end_);
}

bool TlsStream::finish_io(Phase phase, beast::error_code& ec, std::size_t bytes) {
  if (phase == Phase::reading) {
    if (ec == asio::error::eof) {
      input_ended_ = true;
      ec = {};
      return true;
    }
    if (ec) return false;
    input_end_ += bytes;
    return true;
  }
  if (phase == Phase::flushing) {
    if (ec) return false;
    output_.clear();
  }
  return true;
}

int TlsStream::bio_read(BIO* bio, char* out, int size) {
  auto& stream = *static_cast<TlsStream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const std::size_t available = stream.input_end_ - stream.input_begin_;
  if (available == 0) {
    if (stream.input_ended_) return 0;
    BIO_set_retry_read(bio);
    return -1;
  }
  const std::size_t taken = std::min(available, static_cast<std::size_t>(std::max(size, 0)));
  std::memcpy(out, stream.input_.get() + stream.input_begin_, taken);
  stream.input_begin_ += taken;
  return static_cast<int>(taken);
}

int TlsStream::bio_write(BIO* bio, const char* data, int size) {
  auto& stream = *static_cast<TlsStream*>(BIO_get_data(bio));
  BIO_clear_retry_flags(bio);
  const auto* bytes = reinterpret_cast<const unsigned char*>(data);
  stream.output_.insert(stream.output_.end(), bytes, bytes + std::max(size, 0));
  return size;
}

long TlsStream::bio_control(BIO* bio, int command, long, void*) {
  const auto& stream = *static_cast<const TlsStream*>(BIO_get_data(bio));
  switch (command) {
    case BIO_CTRL_FLUSH:
      return 1;
    case BIO_CTRL_PENDING:
      return static_cast<long>(stream.input_end_ - stream.input_begin_);
    case BIO_CTRL_EOF:
      return stream.input_ended_ && stream.input_end_ == stream.input_begin_ ? 1 : 0;
    default:
      return 0;
  }
}

int TlsStream::bio_create(BIO* bio) {
  BIO_set_init(bio, 1);
  return 1;
}

BIO_METHOD* TlsStream::bio_method() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* created =
        BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "tensorstream TLS buffer");
    if (created == nullptr || BIO_meth_set_read(created, bio_read) != 1 ||
        BIO_meth_set_write(created, bio_write) != 1 ||
        BIO_meth_set_ctrl(created, bio_control) != 1 ||
        BIO_meth_set_create(created, bio_create) != 1) {
      throw std::runtime_error("cannot create an OpenSSL BIO method");
    }
    return created;
  }();
  return method;
}

}  // namespace tensorstream
