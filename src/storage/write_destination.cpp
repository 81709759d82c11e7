#include "storage/write_destination.hpp"

#include <algorithm>
#include <boost/asio/this_coro.hpp>
#include <filesystem>
#include <system_error>

#include "tensorstream/error.hpp"
#include "tensorstream/log.hpp"
#include "tensorstream/storage/open_store.hpp"

namespace tensorstream::detail {
namespace {

namespace asio = boost::asio;

bool contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

WriteDestination open_write_destination(const std::string& destination,
                                        asio::any_io_executor executor,
                                        const StoreOptions& options, std::string_view probe) {
  const Url url = Url::parse(destination);
  WriteDestination result{open_store(url, std::move(executor), options), url.path,
                          url.scheme == "file"};
  if (!result.prefix.ends_with('/')) result.prefix.push_back('/');
  // The store's own refusal says why.
  if (!result.store->can_write()) result.store->create_writer(result.key(probe));
  return result;
}

asio::awaitable<void> refuse_leftovers(WriteDestination& destination,
                                       const std::function<bool(std::string_view)>& is_ours,
                                       const std::vector<std::string>& written,
                                       std::string_view command) {
  if (destination.local || !destination.store->can_list()) co_return;
  const auto objects = co_await destination.store->list(destination.prefix, ListDepth::one_level);
  for (const auto& object : objects) {
    const std::string_view name = std::string_view(object.key).substr(
        std::min(object.key.size(), destination.prefix.size()));
    if (!is_ours(name) || contains(written, name)) continue;
    throw InvalidArgument(destination.store->url(object.key) +
                          ": left by an earlier run and not replaced by this one, so it would "
                          "mix with the new files; " +
                          std::string(command) +
                          " cannot delete objects: remove it or write to another prefix");
  }
}

void remove_local_leftovers(const std::string& directory,
                            const std::function<bool(std::string_view)>& is_ours,
                            const std::vector<std::string>& kept) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(directory, ec), end; !ec && it != end;
       it.increment(ec)) {
    const auto name = it->path().filename().string();
    if (!it->is_regular_file() || !is_ours(name) || contains(kept, name)) continue;
    std::error_code remove_ec;
    if (!std::filesystem::remove(it->path(), remove_ec) && remove_ec) {
      throw StorageError(it->path().string(), "cannot remove: " + remove_ec.message());
    }
  }
  if (ec && ec != std::errc::no_such_file_or_directory) {
    throw StorageError(directory, "cannot list directory: " + ec.message());
  }
}

asio::awaitable<void> abort_after_failure(std::span<ObjectWriter* const> writers) {
  co_await asio::this_coro::reset_cancellation_state(asio::disable_cancellation());
  for (ObjectWriter* writer : writers) {
    try {
      co_await writer->abort();
    } catch (const std::exception& error) {
      log(LogLevel::warning, error.what());
    }
  }
}

asio::awaitable<void> commit_or_abort(ObjectWriter& writer, asio::awaitable<void> writes) {
  std::exception_ptr error;
  try {
    co_await std::move(writes);
    co_await writer.commit();
  } catch (...) {
    error = std::current_exception();
  }
  if (error) {
    ObjectWriter* const failed[] = {&writer};
    co_await abort_after_failure(failed);
    std::rethrow_exception(error);
  }
}

asio::awaitable<void> write_object(ObjectStore& store, std::string key, std::string_view bytes) {
  const auto writer = store.create_writer(std::move(key));
  auto writes = writer->write(std::as_bytes(std::span(bytes)));
  co_await commit_or_abort(*writer, std::move(writes));
}

}  // namespace tensorstream::detail
