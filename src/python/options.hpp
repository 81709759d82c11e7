#pragma once
// Options given from Python, as the C++ option structs. The Python package passes a dict of the
// keyword arguments it accepts (tensorstream/_options.py lists them and rejects others); values
// of None are left unset, so that the environment and the defaults apply as in C++.

#include <pybind11/pybind11.h>

#include "tensorstream/storage/store_options.hpp"
#include "tensorstream/streaming/streamer_options.hpp"

namespace tensorstream::python {

/// StreamerOptions from `options`: chunk_size, max_concurrency, rank, tensor_parallel_size,
/// memory_limit, memory_accounting, read_order, io_threads, and the store options below.
/// Throws pybind11::type_error for a value of the wrong type, InvalidArgument for a bad value.
StreamerOptions streamer_options(const pybind11::dict& options);

/// StoreOptions from the backends' keys of `options`: endpoint_url, account, region, addressing,
/// anonymous, ca_bundle, verify, connect_timeout, response_timeout, read_timeout,
/// max_retries, use_io_uring, direct_io.
StoreOptions store_options(const pybind11::dict& options);

}  // namespace tensorstream::python
