# Installation and the find_package(goro) config. Every module target adds
# itself to the export set with goro_add_library(); headers install from include/goro.
include(CMakePackageConfigHelpers)
get_property(_goro_targets GLOBAL PROPERTY GORO_EXPORTED_TARGETS)
install(TARGETS ${_goro_targets} EXPORT goroTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/goro DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT goroTargets NAMESPACE goro:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/goro)
# The build tree's goroConfig.cmake includes this one (find_package with
# goro_DIR pointing at a build tree, no install).
export(EXPORT goroTargets NAMESPACE goro:: FILE ${PROJECT_BINARY_DIR}/goroTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/goroConfig.cmake.in
  ${PROJECT_BINARY_DIR}/goroConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/goro)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/goroConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/goroConfig.cmake ${PROJECT_BINARY_DIR}/goroConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/goro)
