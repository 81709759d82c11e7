include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# Shared libraries versioned like the package: before 1.0, a minor release may break the ABI, so
# the soname carries the minor version (libtensorstream.so.0.1), as SameMinorVersion below says.
set(tensorstream_shared_libraries tensorstream_batching tensorstream_core)
if(TENSORSTREAM_WITH_TORCH)
  list(APPEND tensorstream_shared_libraries tensorstream)
endif()
set_target_properties(${tensorstream_shared_libraries} PROPERTIES
  VERSION ${PROJECT_VERSION}
  SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  INSTALL_RPATH "$ORIGIN")

install(DIRECTORY include/tensorstream DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# One export file per component, so that the package config loads (and asks consumers for the
# dependencies of) only the components they name: find_package(tensorstream COMPONENTS batching)
# needs the Boost headers and nothing else.
install(TARGETS tensorstream_batching EXPORT tensorstreamBatchingTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tensorstream_core EXPORT tensorstreamCoreTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
if(TENSORSTREAM_WITH_TORCH)
  install(TARGETS tensorstream tensorstream_c10d tensorstream_torch EXPORT tensorstreamTorchTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TENSORSTREAM_BUILD_CLI)
  install(TARGETS tensorstream_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
set(tensorstream_export_sets Batching Core)
if(TENSORSTREAM_WITH_TORCH)
  list(APPEND tensorstream_export_sets Torch)
endif()
foreach(component ${tensorstream_export_sets})
  install(EXPORT tensorstream${component}Targets NAMESPACE tensorstream::
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)
endforeach()
configure_package_config_file(cmake/tensorstreamConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/tensorstreamConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tensorstream)

# pkg-config files for builds without CMake: tensorstream-batching, tensorstream-core (no
# libtorch) and tensorstream (the torch::Tensor API, with libtorch's flags as this build found
# them).
set(tensorstream_pc_files tensorstream-batching tensorstream-core)
if(TENSORSTREAM_WITH_TORCH)
  list(APPEND tensorstream_pc_files tensorstream)
  string(JOIN " -I" tensorstream_torch_cflags "" ${TORCH_INCLUDE_DIRS})
  set(tensorstream_torch_libs "")
  foreach(library torch torch_cpu c10)
    find_library(tensorstream_torch_${library} ${library} HINTS ${TORCH_INSTALL_PREFIX}/lib)
    if(tensorstream_torch_${library})
      get_filename_component(directory ${tensorstream_torch_${library}} DIRECTORY)
      string(APPEND tensorstream_torch_libs " -L${directory} -l${library}")
    endif()
  endforeach()
endif()
# Relative to where the file is installed, so that `cmake --install --prefix` and a moved prefix
# keep it right.
file(RELATIVE_PATH tensorstream_prefix_from_pc ${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig
  ${CMAKE_INSTALL_PREFIX})
foreach(name ${tensorstream_pc_files})
  configure_file(cmake/${name}.pc.in ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/${name}.pc
    DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
