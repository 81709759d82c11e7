#pragma once
// What /proc/self says about the mapping that holds an address, for tests of how memory is mapped.

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace tensorstream::testing {

namespace detail {

// Whether the "begin-end" range of a maps or smaps line holds `address`.
inline bool range_holds(const std::string& range, const void* address) {
  const auto target = reinterpret_cast<std::uintptr_t>(address);
  const auto dash = range.find('-');
  if (dash == std::string::npos) return false;
  const auto begin = std::stoull(range.substr(0, dash), nullptr, 16);
  const auto end = std::stoull(range.substr(dash + 1), nullptr, 16);
  return begin <= target && target < end;
}

}  // namespace detail

/// The permissions /proc/self/maps lists for the mapping holding `address` ("r--s"), or
/// "unmapped".
inline std::string permissions_at(const void* address) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, permissions;
    fields >> range >> permissions;
    if (detail::range_holds(range, address)) return permissions;
  }
  return "unmapped";
}

/// The VmFlags /proc/self/smaps lists for the mapping holding `address` ("rd wr sh mr mw me ms
/// hg"; "hg" is MADV_HUGEPAGE), or "unmapped".
inline std::string vm_flags_at(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    // A mapping's first line starts with its range ("7f12…-7f13…"); the field lines that follow
    // start with a name ending in a colon ("Rss:"), and no name holds a dash.
    const std::string first = line.substr(0, line.find(' '));
    if (first.find('-') != std::string::npos && first.back() != ':') {
      inside = detail::range_holds(first, address);
    } else if (inside && line.starts_with("VmFlags:")) {
      const auto flags = line.find_first_not_of(' ', 8);
      return flags == std::string::npos ? "" : line.substr(flags);
    }
  }
  return "unmapped";
}

/// Whether this kernel has transparent huge pages at all (not so without
/// CONFIG_TRANSPARENT_HUGEPAGE, or in some sandboxes), without which MADV_HUGEPAGE fails.
inline bool transparent_huge_pages_available() {
  return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
}

}  // namespace tensorstream::testing
