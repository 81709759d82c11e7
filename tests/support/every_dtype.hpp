#pragma once
// Every element type of the safetensors format, for tests that go through all of them.

#include <array>

#include "tensorstream/safetensors/dtype.hpp"

namespace tensorstream::testing {

/// Every Dtype, in declaration order.
inline constexpr std::array<Dtype, 12> every_dtype{
    Dtype::F64, Dtype::F32, Dtype::F16, Dtype::BF16, Dtype::I64,     Dtype::I32,
    Dtype::I16, Dtype::I8,  Dtype::U8,  Dtype::BOOL, Dtype::F8_E5M2, Dtype::F8_E4M3};

}  // namespace tensorstream::testing
