#pragma once
// The files of a model directory on a store that cannot list, found as a stream finds them.

#include <boost/asio/awaitable.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "tensorstream/storage/object_store.hpp"

namespace tensorstream::detail {

/// The files of the model directory `prefix` (ending in '/') on `store`, which cannot list
/// (http(s)://), each asked for by name, at most `max_concurrency` requests at a time: the
/// known_artifact_names that are there and, with `weights`, the files its
/// model.safetensors.index.json names (a stream's shards; any it names that is missing fails),
/// else model.safetensors where there is one. In key order, as a listing gives them; empty where
/// none is there.
boost::asio::awaitable<std::vector<ObjectInfo>> unlisted_model_files(ObjectStore& store,
                                                                     std::string prefix,
                                                                     std::size_t max_concurrency,
                                                                     bool weights);

}  // namespace tensorstream::detail
