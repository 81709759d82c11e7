#include "storage/http/status_failure.hpp"

#include <boost/beast/http/field.hpp>
#include <boost/beast/http/status.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "base/ascii.hpp"

namespace tensorstream {
namespace {

namespace beast = boost::beast;

// Error bodies longer than this are not worth reading: the connection is closed instead.
constexpr std::uint64_t max_error_body = 64 * 1024;
constexpr std::size_t max_quote = 200;

bool is_transient_status(unsigned status) {
  return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 ||
         status == 504;
}

bool is_redirect(unsigned status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

// Plain text, JSON and XML (S3 and GCS explain errors in these) say something useful in a
// one-line message; HTML pages are mostly markup.
bool is_quotable(std::string_view content_type) {
  const std::string type = ascii_lowercase(content_type.substr(0, content_type.find(';')));
  if (type.starts_with("text/html")) return false;
  return type.starts_with("text/") || type == "application/json" || type == "application/xml" ||
         type.ends_with("+json") || type.ends_with("+xml");
}

// The body on one line: runs of whitespace and control characters become one space, and it is
// cut at max_quote bytes on a UTF-8 character boundary.
std::string quote(std::string_view body) {
  std::string line;
  bool space = false;
  for (const char c : body) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      space = !line.empty();
      continue;
    }
    if (space) line += ' ';
    space = false;
    line += c;
  }
  if (line.size() <= max_quote) return line;
  std::size_t cut = max_quote;
  while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xc0) == 0x80) --cut;
  line.resize(cut);
  return line + "...";
}

}  // namespace

std::string status_text(const HeaderParser& parser) {
  const unsigned code = parser.get().result_int();
  const auto status = beast::http::int_to_status(code);
  const std::string_view reason = status == beast::http::status::unknown
                                      ? std::string_view(parser.get().reason())
                                      : std::string_view(beast::http::obsolete_reason(status));
  std::string text = "HTTP " + std::to_string(code);
  if (!reason.empty()) {
    text += ' ';
    text += reason;
  }
  return text;
}

boost::asio::awaitable<Failure> status_failure(Connection& connection, HeaderParser&& parser,
                                               std::chrono::milliseconds timeout) {
  const unsigned code = parser.get().result_int();
  Failure failure{status_text(parser), is_transient_status(code), code == 404};
  failure.status = code;
  failure.headers = parser.get().base();
  const std::string_view location = parser.get()[beast::http::field::location];
  if (code / 100 == 3 && !location.empty()) {
    failure.cause += " (redirect to " + std::string(location) + " not followed)";
    if (is_redirect(code)) failure.location = location;
  }
  const bool keep_alive = parser.keep_alive();
  if (parser.is_done()) {
    connection.set_reusable(keep_alive);
    co_return failure;
  }
  const auto length = parser.content_length();
  if (!parser.chunked() && (!length || *length > max_error_body)) {
    connection.close();
    co_return failure;
  }
  const bool quotable = is_quotable(parser.get()[beast::http::field::content_type]);
  TextParser text(std::move(parser));
  text.body_limit(max_error_body);
  if (co_await connection.read(text, timeout)) {
    connection.close();
    co_return failure;
  }
  connection.set_reusable(keep_alive);
  if (quotable) {
    const std::string quoted = quote(text.get().body());
    if (!quoted.empty()) failure.cause += ": " + quoted;
  }
  failure.body = std::move(text.get().body());
  co_return failure;
}

}  // namespace tensorstream
