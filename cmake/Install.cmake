include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Shared libraries versioned like the package: before 1.0, a minor release may break the ABI, so
# the soname carries the minor version (libtensorstream.so.0.1), as SameMinorVersion below says.
set_target_properties(tensorstream_core tensorstream PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  INSTALL_RPATH "$ORIGIN")
# An installed tool finds the libraries beside it, wherever the prefix was moved to.
if(TENSORSTREAM_BUILD_CLI)
  file(RELATIVE_PATH tensorstream_lib_from_bin ${CMAKE_INSTALL_FULL_BINDIR}
    ${CMAKE_INSTALL_FULL_LIBDIR})
  set_target_properties(tensorstream_cli PROPERTIES
    INSTALL_RPATH "$ORIGIN/${tensorstream_lib_from_bin}")
endif()

install(DIRECTORY include/tensorstream DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS tensorstream_core tensorstream tensorstream_torch EXPORT tensorstreamTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TENSORSTREAM_BUILD_CLI)
  install(TARGETS tensorstream_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT tensorstreamTargets NAMESPACE tensorstream::
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)
configure_package_config_file(cmake/tensorstreamConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)

# pkg-config files for builds without CMake: tensorstream-core (no libtorch) and tensorstream
# (the torch::Tensor API, with libtorch's flags as this build found them).
string(JOIN " -I" tensorstream_torch_cflags "" ${TORCH_INCLUDE_DIRS})
set(tensorstream_torch_libs "")
foreach(library torch torch_cpu c10)
  find_library(tensorstream_torch_${library} ${library} HINTS ${TORCH_INSTALL_PREFIX}/lib)
  if(tensorstream_torch_${library})
    get_filename_component(directory ${tensorstream_torch_${library}} DIRECTORY)
    string(APPEND tensorstream_torch_libs " -L${directory} -l${library}")
  endif()
endforeach()
# Relative to where the file is installed, so that `cmake --install --prefix` and a moved prefix
# keep it right.
file(RELATIVE_PATH tensorstream_prefix_from_pc ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
  ${CMAKE_INSTALL_PREFIX})
foreach(name tensorstream-core tensorstream)
  configure_file(cmake/${name}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
