#pragma once
// Where shard and gen-model write their files: a local directory or a prefix of any store that
// can write, with the files going through its ObjectWriters.

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tensorstream/storage/object_store.hpp"
#include "tensorstream/storage/store_options.hpp"

namespace tensorstream::detail {

/// A directory or bucket prefix that files are written into.
struct WriteDestination {
  std::unique_ptr<ObjectStore> store;
  /// The key prefix of the files, ending with '/': the directory as written for local paths.
  std::string prefix;
  /// Whether it is a local directory (a path or a file:// URL).
  bool local = false;

  /// The key of the file `name`.
  std::string key(std::string_view name) const { return prefix + std::string(name); }
  /// The URL of the file `name`, as messages and reports name it (the path for local files).
  std::string url(std::string_view name) const { return store->url(key(name)); }
};

/// Opens `destination`, a local directory path or the URL of a directory or prefix (file://,
/// s3://, ...), with its store running on `executor`. Nothing is read or written.
/// @throws InvalidArgument for a malformed URL, or, naming the object `probe` under it, for a
///   store that cannot write (the store's own refusal, e.g. for http://).
WriteDestination open_write_destination(const std::string& destination,
                                        boost::asio::any_io_executor executor,
                                        const StoreOptions& options, std::string_view probe);

/// Throws InvalidArgument, before anything is written, when the bucket prefix of `destination`
/// holds a file that `is_ours` accepts and this run would not replace (its name is not in
/// `written`): no store can delete, so such a leftover of an earlier run would mix with the new
/// files. Does nothing for local directories (the caller removes leftovers there) and for stores
/// that cannot list.
boost::asio::awaitable<void> refuse_leftovers(WriteDestination& destination,
                                              const std::function<bool(std::string_view)>& is_ours,
                                              const std::vector<std::string>& written,
                                              std::string_view command);

/// Removes the files of the local directory `directory` whose names `is_ours` accepts and that
/// are not in `kept`. @throws StorageError naming the file or directory that failed.
void remove_local_leftovers(const std::string& directory,
                            const std::function<bool(std::string_view)>& is_ours,
                            const std::vector<std::string>& kept);

/// Aborts `writers` after a failure: also when the failure is the caller's cancellation, since
/// what they stored must still be removed. A writer that cannot abort is logged as a warning
/// rather than thrown: the failure that led here is the one to report.
boost::asio::awaitable<void> abort_after_failure(std::span<ObjectWriter* const> writers);

/// Awaits `writes`, the writes into `writer`, then commits `writer`; when either fails, aborts
/// `writer` (see abort_after_failure) and rethrows.
boost::asio::awaitable<void> commit_or_abort(ObjectWriter& writer,
                                             boost::asio::awaitable<void> writes);

/// Writes `bytes` as the object `key` of `store` and commits it; aborts the writer on failure.
boost::asio::awaitable<void> write_object(ObjectStore& store, std::string key,
                                          std::string_view bytes);

}  // namespace tensorstream::detail
