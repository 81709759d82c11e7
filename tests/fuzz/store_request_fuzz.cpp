// The input is the JSON text of a store server request, as any local process allowed on the
// socket may send it. The parser either refuses it with InvalidArgument or returns a request
// within the protocol's limits, which, written again as the client library writes requests,
// parses to the same request.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/json_string.hpp"
#include "store/wire.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/store/protocol.hpp"

namespace store = tensorstream::store;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  store::Request request;
  try {
    request = store::parse_request(json);
  } catch (const tensorstream::InvalidArgument&) {
    return 0;
  }
  if (request.timeout < std::chrono::milliseconds(0) || request.timeout > store::max_attach_timeout) {
    __builtin_trap();
  }
  std::string again;
  switch (request.op) {
    case store::Operation::status:
      again = "{\"op\":\"status\"}";
      break;
    case store::Operation::reload:
      again = request.source.empty()
                  ? std::string("{\"op\":\"reload\"}")
                  : "{\"op\":\"reload\",\"source\":" + tensorstream::json_string(request.source) + "}";
      break;
    case store::Operation::attach:
      again = "{\"op\":\"attach\",\"rank\":" + std::to_string(request.rank) +
              ",\"timeout_ms\":" + std::to_string(request.timeout.count()) + "}";
      break;
  }
  const store::Request reparsed = store::parse_request(again);
  if (reparsed.op != request.op || reparsed.source != request.source) __builtin_trap();
  if (request.op == store::Operation::attach &&
      (reparsed.rank != request.rank || reparsed.timeout != request.timeout)) {
    __builtin_trap();
  }
  return 0;
}
