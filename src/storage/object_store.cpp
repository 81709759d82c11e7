#include "tensorstream/storage/object_store.hpp"

#include "tensorstream/error.hpp"

namespace tensorstream {

std::unique_ptr<ObjectWriter> ObjectStore::create_writer(std::string key, WriteOptions) {
  throw InvalidArgument(url(key) + ": this store is read-only; objects can be written to "
                                   "file://, s3:// and gs:// only");
}

}  // namespace tensorstream
