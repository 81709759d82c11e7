#pragma once
// The cache entries this process has open, shared by its stores: a stream that starts right
// after another of the same object finds what the other wrote and has not recorded yet. At exit,
// what the stores' writers have not written and their recorders have not recorded is finished: a
// program may end as soon as its stream has, before the store that read it is destroyed.
//
// Only the process that opened them finishes them: a forked child (a DataLoader worker, a
// Python os.fork()) starts with none, since the parent's writer threads are not in it, a mutex
// may have been held by one of them at the fork, and a commit there would release the parent's
// range locks, which the child shares.

#include <filesystem>
#include <memory>

#include "storage/cache/cache_entry.hpp"
#include "storage/cache/write_behind.hpp"

namespace tensorstream::detail {

/// The entry at `directory` this process has open, if it serves a store that is `writable` or
/// not; null otherwise.
std::shared_ptr<CacheEntry> shared_entry(const std::filesystem::path& directory, bool writable);

/// Offers `entry` to the other stores of this process (a writable one replaces a read-only one).
void share_entry(const std::filesystem::path& directory, const std::shared_ptr<CacheEntry>& entry);

/// Has the exit wait for the copies `write_behind` holds, while it lives.
void register_write_behind(const std::shared_ptr<WriteBehind>& write_behind);

}  // namespace tensorstream::detail
