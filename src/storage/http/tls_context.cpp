#include "storage/http/tls_context.hpp"

#include <openssl/ssl.h>

#include "storage/http/tls_stream.hpp"
#include "tensorstream/error.hpp"

namespace tensorstream {

boost::asio::ssl::context make_tls_context(const HttpOptions& options, const std::string& origin) {
  namespace ssl = boost::asio::ssl;
  ssl::context context(ssl::context::tls_client);
  SSL_CTX_set_min_proto_version(context.native_handle(), TLS1_2_VERSION);
  context.set_verify_mode(options.verify_peer ? ssl::verify_peer : ssl::verify_none);
  boost::system::error_code ec;
  if (!options.ca_file.empty()) {
    context.load_verify_file(options.ca_file, ec);
    if (ec) {
      throw InvalidArgument(origin + ": cannot load CA file '" + options.ca_file +
                            "': " + ec.message());
    }
  } else {
    context.set_default_verify_paths(ec);
    if (ec) {
      throw InvalidArgument(origin + ": cannot load the system's trusted CAs: " + ec.message());
    }
  }
  TlsStream::enable_session_resumption(context);
  return context;
}

}  // namespace tensorstream
