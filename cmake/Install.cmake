include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

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
