#pragma once
// GoogleTest prints an ErrorKind by its name ("access_denied") instead of its bytes.

#include <ostream>

#include "tensorstream/error.hpp"

namespace tensorstream {

/// Found by GoogleTest through argument-dependent lookup.
inline void PrintTo(ErrorKind kind, std::ostream* out) { *out << error_kind_name(kind); }

}  // namespace tensorstream
