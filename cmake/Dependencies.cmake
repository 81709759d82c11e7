# Every dependency comes from Debian 12 packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(Boost 1.81 REQUIRED)
find_package(OpenSSL REQUIRED)
find_package(simdjson REQUIRED)
find_package(pugixml REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(liburing REQUIRED IMPORTED_TARGET liburing)
# The cache's hashes: Debian's libxxhash picks the widest vector unit at run time (AVX-512, AVX2,
# SSE2), which a header-only build for the baseline processor cannot.
pkg_check_modules(libxxhash REQUIRED IMPORTED_TARGET libxxhash)
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
