# One option per sanitizer build (simdjson's developer-options.cmake is the model). Each is its own
# build directory in CI: ASan and TSan cannot share a process, and a build that mixes them fails
# at link time with an error far from the cause.
option(TENSORSTREAM_SANITIZE_ADDRESS
  "Build with AddressSanitizer and UndefinedBehaviorSanitizer; any report aborts the process" OFF)
option(TENSORSTREAM_SANITIZE_THREAD "Build with ThreadSanitizer" OFF)

if(DEFINED TENSORSTREAM_SANITIZE AND NOT TENSORSTREAM_SANITIZE STREQUAL "")
  message(FATAL_ERROR "TENSORSTREAM_SANITIZE=${TENSORSTREAM_SANITIZE} is gone: use "
    "-DTENSORSTREAM_SANITIZE_ADDRESS=ON or -DTENSORSTREAM_SANITIZE_THREAD=ON")
endif()
if(TENSORSTREAM_SANITIZE_ADDRESS AND TENSORSTREAM_SANITIZE_THREAD)
  message(FATAL_ERROR "TENSORSTREAM_SANITIZE_ADDRESS and TENSORSTREAM_SANITIZE_THREAD are mutually "
    "exclusive (the runtimes cannot share a process): configure one build directory for each")
endif()

# Flags go to every target of the project, so the library, the CLI the tests start and the tests
# themselves are all instrumented; libtorch and the system libraries are not.
if(TENSORSTREAM_SANITIZE_ADDRESS)
  # Without UBSan's vptr check, which checks the dynamic type of every access to a polymorphic
  # object: on GCC it made compiling over a quarter slower. The fuzz targets (clang) keep it.
  set(tensorstream_sanitizer_flags -fsanitize=address,undefined -fno-sanitize=vptr
    -fno-sanitize-recover=all)
  # The instrumented executables hold over 100 MB of data that a position-independent executable
  # relocates at every start: half a second for each of the suite's thousand processes. Linked
  # at a fixed address they start in under a quarter of a second.
  add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
elseif(TENSORSTREAM_SANITIZE_THREAD)
  set(tensorstream_sanitizer_flags -fsanitize=thread)
  # Asio's reference counts release with std::atomic_thread_fence, which ThreadSanitizer does not
  # model (GCC says so with -Wtsan): the last owner's delete of an executor copied across threads
  # is then reported as a race. Without std::atomic Asio counts with Boost's atomic_count, whose
  # acquire-release decrements TSan does see.
  add_compile_definitions(BOOST_ASIO_DISABLE_STD_ATOMIC)
endif()
if(tensorstream_sanitizer_flags)
  add_compile_options(${tensorstream_sanitizer_flags} -fno-omit-frame-pointer)
  add_link_options(${tensorstream_sanitizer_flags})
endif()
