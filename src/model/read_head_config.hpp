#pragma once

#include <boost/asio/awaitable.hpp>
#include <string>

#include "tensorstream/model/head_config.hpp"
#include "tensorstream/storage/object_store.hpp"

namespace tensorstream::detail {

/// The text of the Hugging Face config.json at `key` of `store`. Throws InvalidArgument naming the
/// object when it is far larger than a config can be, and what the store throws when it cannot be
/// read.
boost::asio::awaitable<std::string> read_config_text(ObjectStore& store, std::string key);

/// The head layout of the Hugging Face config.json at `key` of `store` (see parse_head_config).
/// Throws InvalidArgument naming the object when it is far larger than a config can be, and what
/// the store throws when it cannot be read.
boost::asio::awaitable<HeadConfig> read_head_config(ObjectStore& store, std::string key);

}  // namespace tensorstream::detail
