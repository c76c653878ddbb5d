# What an installed hotcold offers to other builds:
#   <libdir>/pkgconfig/hotcold.pc            pkg-config --cflags --libs hotcold
#   <libdir>/cmake/hotcold/hotcoldConfig.cmake, ...ConfigVersion.cmake,
#                          hotcoldTargets.cmake
#                                            find_package(hotcold): hotcold::hotcold,
#                                            hotcold::plugin, hotcold_add_plugin()
#   <datadir>/doc/hotcold/LICENSE
# Both descriptions locate the prefix from where they are installed, not
# from CMAKE_INSTALL_PREFIX, so `cmake --install --prefix P` and a prefix
# moved later still describe themselves correctly (as the library finds its
# plugins next to itself, core/runtime/loader.c).
include(CMakePackageConfigHelpers)

set(HC_CMAKE_PACKAGE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/hotcold)
set(HC_PLUGIN_LIBDIR ${CMAKE_INSTALL_LIBDIR}/hotcold)

install(EXPORT hotcoldTargets NAMESPACE hotcold:: DESTINATION ${HC_CMAKE_PACKAGE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/hotcoldConfig.cmake.in
  ${PROJECT_BINARY_DIR}/hotcoldConfig.cmake
  INSTALL_DESTINATION ${HC_CMAKE_PACKAGE_DIR}
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR HC_PLUGIN_LIBDIR)
# 0.x: a new minor may change the API (CMake's rule for SameMinorVersion).
write_basic_package_version_file(${PROJECT_BINARY_DIR}/hotcoldConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/hotcoldConfig.cmake
              ${PROJECT_BINARY_DIR}/hotcoldConfigVersion.cmake
        DESTINATION ${HC_CMAKE_PACKAGE_DIR})

# pkg-config: paths relative to ${pcfiledir} unless the dirs were given
# as absolute paths.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(HC_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(HC_PC_LIBDIR "${CMAKE_INSTALL_FULL_LIBDIR}")
  set(HC_PC_INCLUDEDIR "${CMAKE_INSTALL_FULL_INCLUDEDIR}")
else()
  file(RELATIVE_PATH HC_PC_UP "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" HC_PC_UP "${HC_PC_UP}")
  set(HC_PC_PREFIX "\${pcfiledir}/${HC_PC_UP}")
  set(HC_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  set(HC_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/hotcold.pc.in ${PROJECT_BINARY_DIR}/hotcold.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/hotcold.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/hotcold)
