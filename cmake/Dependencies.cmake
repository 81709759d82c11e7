# Every dependency comes from Debian 12 packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(simdjson REQUIRED)
find_package(pugixml REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(liburing REQUIRED IMPORTED_TARGET liburing)
# xxHash's header only (XXH_INLINE_ALL): the cache's hashes are inlined, nothing is linked.
find_path(tensorstream_xxhash_include xxhash.h)
if(NOT tensorstream_xxhash_include)
  message(FATAL_ERROR "xxhash.h not found: install libxxhash-dev (scripts/setup.sh does)")
endif()
if(TENSORSTREAM_BUILD_CLI)
  find_package(CLI11 REQUIRED)
endif()

if(TENSORSTREAM_WITH_TORCH)
  find_package(Torch REQUIRED)
  # libtorch's CMake package exports a variable, not a target; wrap it so the library can link it
  # like any other dependency and the installed package config can find it again.
  add_library(tensorstream_torch INTERFACE)
  target_link_libraries(tensorstream_torch INTERFACE ${TORCH_LIBRARIES})
endif()
