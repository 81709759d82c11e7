# Default flags per build type, read by project() after CMake's own (CMAKE_USER_MAKE_RULES_OVERRIDE
# in CMakeLists.txt); a -DCMAKE_CXX_FLAGS_RELEASE=... of the user's still wins.
#
# Release is -O2 rather than CMake's -O3: on 2 cores -O3 took 10 % longer to build the tool and
# the libraries, and streaming from nginx or local files ran no faster, its time being spent in
# the kernel, memcpy and OpenSSL, which the flag does not reach.
set(CMAKE_CXX_FLAGS_RELEASE_INIT "-O2 -DNDEBUG")
