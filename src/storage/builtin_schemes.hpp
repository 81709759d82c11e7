#pragma once
// The schemes the library registers from the start, each defined next to its store.

#include <vector>

#include "tensorstream/storage/scheme.hpp"

namespace tensorstream {

Scheme file_scheme();                 // storage/file/file_store.cpp
std::vector<Scheme> http_schemes();   // storage/http/http_store.cpp: http and https
Scheme s3_scheme();                   // storage/s3/s3_store.cpp
Scheme gcs_scheme();                  // storage/gcs/gcs_store.cpp

}  // namespace tensorstream
