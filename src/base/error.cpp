#include "tensorstream/error.hpp"

#include <array>
#include <utility>

namespace tensorstream {
namespace {

// The protocol's names: what the store server has always sent for these kinds stays the same.
constexpr std::array<std::pair<ErrorKind, std::string_view>, 10> kind_names{{
    {ErrorKind::other, "error"},
    {ErrorKind::invalid_argument, "invalid_argument"},
    {ErrorKind::format, "format"},
    {ErrorKind::storage, "storage"},
    {ErrorKind::not_found, "not_found"},
    {ErrorKind::access_denied, "access_denied"},
    {ErrorKind::credentials, "credentials"},
    {ErrorKind::state, "state"},
    {ErrorKind::cancelled, "cancelled"},
    {ErrorKind::deadline_exceeded, "deadline_exceeded"},
}};

}  // namespace

std::string_view error_kind_name(ErrorKind kind) {
  for (const auto& [known, name] : kind_names) {
    if (known == kind) return name;
  }
  return "error";
}

ErrorKind error_kind_from_name(std::string_view name) {
  for (const auto& [kind, known] : kind_names) {
    if (known == name) return kind;
  }
  return ErrorKind::other;
}

}  // namespace tensorstream
