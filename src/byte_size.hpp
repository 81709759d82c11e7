#pragma once
// Byte sizes as people write and read them, for the CLI's options and for messages.

#include <cstdint>
#include <string>
#include <string_view>

namespace tensorstream {

/// Parses "16MiB", "1.5GiB", "512KiB", "100MB", "4096": binary (KiB, MiB, GiB, TiB) and decimal
/// (KB, MB, GB, TB) units, case-insensitive, optional "B". Throws InvalidArgument naming `option`.
std::uint64_t parse_byte_size(std::string_view text, std::string_view option);

/// "1.5 GiB", "12.0 MiB", "512 B": for humans.
std::string format_byte_size(std::uint64_t bytes);

/// A rate in the units of format_byte_size: "850.0 MiB/s", "512 B/s". The one convention of the
/// tool's human output (progress and summaries); JSON and the bench report give GB/s (10^9).
std::string format_byte_rate(double bytes_per_second);

/// The rate of `bytes` moved in `seconds`, as above; "0 B/s" when no time passed.
std::string format_byte_rate(std::uint64_t bytes, double seconds);

}  // namespace tensorstream
