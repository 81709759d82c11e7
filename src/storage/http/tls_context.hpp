#pragma once
// The OpenSSL client context of an https store.

#include <boost/asio/ssl/context.hpp>
#include <string>

#include "tensorstream/storage/http_options.hpp"

namespace tensorstream {

/// A TLS 1.2+ client context trusting options.ca_file, or the system store when it is empty
/// (OpenSSL's default paths, which honour SSL_CERT_FILE and SSL_CERT_DIR), and verifying peers
/// unless options.verify_peer is off. Throws InvalidArgument naming `origin` and the file when
/// the CAs cannot be loaded.
boost::asio::ssl::context make_tls_context(const HttpOptions& options, const std::string& origin);

}  // namespace tensorstream
