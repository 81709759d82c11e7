#pragma once
// Byte sizes as people write and read them, for the CLI's options and for messages.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tensorstream {

/// Parses "16MiB", "1.5GiB", "512KiB", "100MB", "4096": binary (KiB, MiB, GiB, TiB) and decimal
/// (KB, MB, GB, TB) units, case-insensitive, "B" optional after "i". Throws InvalidArgument naming
/// `option`, also for a bare prefix ("8M"), which one tool reads as MiB and another as MB:
/// "--chunk-size: 8M is ambiguous: write 8MiB (8388608 bytes) or 8MB (8000000 bytes)".
std::uint64_t parse_byte_size(std::string_view text, std::string_view option);

/// For a size written with a bare prefix ("8M", "512k"), what to write instead: "write 8MiB
/// (8388608 bytes) or 8MB (8000000 bytes)"; nullopt for any other text.
std::optional<std::string> ambiguous_byte_size(std::string_view text);

/// "1.5 GiB", "12.0 MiB", "512 B": for humans.
std::string format_byte_size(std::uint64_t bytes);

/// A rate in the units of format_byte_size: "850.0 MiB/s", "512 B/s". The one convention of the
/// tool's human output (progress and summaries); JSON and the bench report give GB/s (10^9).
std::string format_byte_rate(double bytes_per_second);

/// The rate of `bytes` moved in `seconds`, as above; "0 B/s" when no time passed.
std::string format_byte_rate(std::uint64_t bytes, double seconds);

}  // namespace tensorstream
