#include "python/options.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

#include "base/environment_setting.hpp"
#include "streaming/options_check.hpp"
#include "tensorstream/error.hpp"
#include "tensorstream/storage/cache_options.hpp"

namespace py = pybind11;

namespace tensorstream::python {
namespace {

// The value of `key`, or nullopt when it is absent or None.
std::optional<py::object> value_of(const py::dict& options, const char* key) {
  if (!options.contains(key)) return std::nullopt;
  py::object value = options[key];
  if (value.is_none()) return std::nullopt;
  return value;
}

[[noreturn]] void wrong_type(const char* key, const char* expected, const py::object& value) {
  throw py::type_error(std::string(key) + " must be " + expected + ", not " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

// bool is an int in Python; an option that counts refuses it, as `True` bytes is a mistake.
std::optional<std::int64_t> integer(const py::dict& options, const char* key) {
  const auto value = value_of(options, key);
  if (!value) return std::nullopt;
  if (py::isinstance<py::bool_>(*value) || !py::isinstance<py::int_>(*value)) {
    wrong_type(key, "an int", *value);
  }
  try {
    return value->cast<std::int64_t>();
  } catch (const py::cast_error&) {
    throw InvalidArgument(std::string(key) + " " + py::str(*value).cast<std::string>() +
                          " is out of range");
  }
}

std::optional<std::uint64_t> positive(const py::dict& options, const char* key) {
  const auto value = integer(options, key);
  if (!value) return std::nullopt;
  if (*value <= 0) {
    throw InvalidArgument(std::string(key) + " must be positive, got " + std::to_string(*value));
  }
  return static_cast<std::uint64_t>(*value);
}

std::optional<std::int64_t> non_negative(const py::dict& options, const char* key) {
  const auto value = integer(options, key);
  if (value && *value < 0) {
    throw InvalidArgument(std::string(key) + " must not be negative, got " +
                          std::to_string(*value));
  }
  return value;
}

// `value` when it is at most `limit`, for options stored in narrower types than Python's ints.
template <class Number>
std::optional<Number> at_most(const char* key, std::optional<Number> value, Number limit) {
  if (value && *value > limit) {
    throw InvalidArgument(std::string(key) + " " + std::to_string(*value) +
                          " is too large (at most " + std::to_string(limit) + ")");
  }
  return value;
}

std::optional<bool> boolean(const py::dict& options, const char* key) {
  const auto value = value_of(options, key);
  if (!value) return std::nullopt;
  if (!py::isinstance<py::bool_>(*value)) wrong_type(key, "a bool", *value);
  return value->cast<bool>();
}

std::optional<std::string> text(const py::dict& options, const char* key) {
  const auto value = value_of(options, key);
  if (!value) return std::nullopt;
  if (py::isinstance<py::str>(*value)) return value->cast<std::string>();
  // Paths (pathlib.Path, anything os.fspath accepts) are text too.
  if (py::hasattr(*value, "__fspath__")) {
    return py::module_::import("os").attr("fspath")(*value).cast<std::string>();
  }
  wrong_type(key, "a str", *value);
}

// Seconds as a float or int, as Python's own timeouts (socket.settimeout) take them.
std::optional<std::chrono::milliseconds> seconds(const py::dict& options, const char* key) {
  const auto value = value_of(options, key);
  if (!value) return std::nullopt;
  if (py::isinstance<py::bool_>(*value) ||
      !(py::isinstance<py::float_>(*value) || py::isinstance<py::int_>(*value))) {
    wrong_type(key, "a number of seconds", *value);
  }
  double number = 0;
  try {
    number = value->cast<double>();
  } catch (const py::cast_error&) {
    number = HUGE_VAL;  // an int too large for a double
  }
  if (!std::isfinite(number) || number <= 0 || number > 86400.0 * 365) {
    throw InvalidArgument(std::string(key) + " must be a positive number of seconds, got " +
                          py::str(*value).cast<std::string>());
  }
  return std::chrono::milliseconds(static_cast<std::int64_t>(std::ceil(number * 1000)));
}

// One of `names` (the enum's values in Python, as the C++ enumerators are spelled).
template <class Enum, std::size_t N>
std::optional<Enum> choice(const py::dict& options, const char* key,
                           const std::pair<const char*, Enum> (&names)[N]) {
  const auto value = text(options, key);
  if (!value) return std::nullopt;
  std::string expected;
  for (const auto& [name, enumerator] : names) {
    if (*value == name) return enumerator;
    expected += expected.empty() ? "" : ", ";
    expected += std::string("'") + name + "'";
  }
  throw InvalidArgument(std::string(key) + " must be one of " + expected + ", got '" + *value +
                        "'");
}

}  // namespace

StoreOptions store_options(const py::dict& options) {
  StoreOptions store;
  if (auto endpoint = text(options, "endpoint_url")) {
    store.s3().endpoint = *endpoint;
    store.gcs().endpoint = *endpoint;
    store.azure().endpoint = *endpoint;
    store.hf().endpoint = *endpoint;
  }
  if (auto token = text(options, "hf_token")) store.hf().token = *token;
  if (auto account = text(options, "account")) store.azure().account = *account;
  if (auto region = text(options, "region")) store.s3().region = *region;
  static constexpr std::pair<const char*, S3Addressing> addressing_names[] = {
      {"auto", S3Addressing::automatic},
      {"virtual", S3Addressing::virtual_hosted},
      {"path", S3Addressing::path_style}};
  if (auto addressing = choice(options, "addressing", addressing_names)) {
    store.s3().addressing = *addressing;
  }
  if (auto anonymous = boolean(options, "anonymous")) {
    store.s3().sign_requests = !*anonymous;
    store.gcs().anonymous = *anonymous;
    store.azure().anonymous = *anonymous;
    store.hf().anonymous = *anonymous;
  }
  if (auto ca_bundle = text(options, "ca_bundle")) store.http().ca_file = *ca_bundle;
  if (auto verify = boolean(options, "verify")) store.http().verify_peer = *verify;
  if (auto timeout = seconds(options, "connect_timeout")) store.http().connect_timeout = *timeout;
  if (auto timeout = seconds(options, "response_timeout")) {
    store.http().response_timeout = *timeout;
  }
  if (auto timeout = seconds(options, "read_timeout")) store.http().read_timeout = *timeout;
  if (auto retries = at_most<std::int64_t>("max_retries", non_negative(options, "max_retries"),
                                           1000)) {
    store.http().max_retries = static_cast<int>(*retries);
  }
  if (auto use_io_uring = boolean(options, "use_io_uring")) store.file().use_io_uring = *use_io_uring;
  static constexpr std::pair<const char*, DirectIo> direct_io_names[] = {
      {"auto", DirectIo::automatic}, {"on", DirectIo::on}, {"off", DirectIo::off}};
  if (auto direct_io = choice(options, "direct_io", direct_io_names)) {
    store.file().direct_io = *direct_io;
  }
  const auto directory = text(options, "cache_dir");
  if (directory) store.get<CacheOptions>().directory = *directory;
  const auto size = positive(options, "cache_size");
  if (size) store.get<CacheOptions>().max_size = *size;
  static constexpr std::pair<const char*, CacheMode> cache_mode_names[] = {
      {"readwrite", CacheMode::readwrite},
      {"read", CacheMode::read},
      {"offline", CacheMode::offline},
      {"off", CacheMode::off}};
  const auto mode = choice(options, "cache_mode", cache_mode_names);
  if (mode) store.get<CacheOptions>().mode = *mode;
  std::optional<CacheFloor> min_free;
  if (const auto value = value_of(options, "cache_min_free")) {
    min_free = py::isinstance<py::str>(*value)
                   ? parse_cache_floor(value->cast<std::string>(), "cache_min_free")
                   : CacheFloor{static_cast<std::uint64_t>(*non_negative(options, "cache_min_free")),
                                std::nullopt};
    store.get<CacheOptions>().min_free = min_free;
  }
  // A cache option without a cache would quietly read the source, which offline promises not to.
  const bool mode_needs_cache = mode && *mode != CacheMode::off;
  if (!directory && !detail::environment_setting("CACHE_DIR") &&
      (mode_needs_cache || size || min_free)) {
    throw InvalidArgument(std::string(mode_needs_cache ? "cache_mode"
                                      : size           ? "cache_size"
                                                       : "cache_min_free") +
                          " needs a cache: cache_dir=, or TENSORSTREAM_CACHE_DIR");
  }
  return store;
}

StreamerOptions streamer_options(const py::dict& options) {
  StreamerOptions result;
  result.chunk_size = positive(options, "chunk_size");
  result.max_concurrency = positive(options, "max_concurrency");
  if (auto rank = at_most<std::int64_t>("rank", non_negative(options, "rank"), 1 << 20)) {
    result.rank = static_cast<int>(*rank);
  }
  if (auto size = at_most<std::uint64_t>("tensor_parallel_size",
                                         positive(options, "tensor_parallel_size"), 1 << 20)) {
    result.tensor_parallel_size = static_cast<int>(*size);
  }
  if (auto limit = positive(options, "memory_limit")) result.memory_limit = *limit;
  static constexpr std::pair<const char*, MemoryAccounting> accounting_names[] = {
      {"stream", MemoryAccounting::stream}, {"until_released", MemoryAccounting::until_released}};
  if (auto accounting = choice(options, "memory_accounting", accounting_names)) {
    result.memory_accounting = *accounting;
  }
  static constexpr std::pair<const char*, ReadOrder> order_names[] = {
      {"smallest_first", ReadOrder::smallest_first}, {"file_order", ReadOrder::file_order}};
  if (auto order = choice(options, "read_order", order_names)) result.read_order = *order;
  if (auto threads = at_most<std::uint64_t>("io_threads", positive(options, "io_threads"),
                                           detail::max_io_threads_limit)) {
    result.io_threads = static_cast<std::size_t>(*threads);
  }
  result.store = store_options(options);
  return result;
}

}  // namespace tensorstream::python
