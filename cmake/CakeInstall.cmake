# Install rules: libcake.so with its SONAME links, include/cake.h, a CMake package (Cake::cake
# through find_package(Cake)) and a pkg-config file (cake.pc). `cmake --install build --prefix
# DIR` installs; the install_consumer test builds a small program against such a prefix.
# Included from the top-level CMakeLists.txt once lib/ has defined the `cake` target.
include_guard(GLOBAL)

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(CAKE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/Cake
    CACHE STRING "Where CakeConfig.cmake is installed (relative to the prefix)")

# libcake.so.0.2.0 and libcake.so.0 are the run-time component; the libcake.so link, the header,
# the CMake package and cake.pc the development one. The install carries no RPATH (CMake drops
# the build tree's; libcake.so needs none: it links only libc, libdl and libpthread).
function(cake_install_library)
  install(TARGETS cake EXPORT CakeTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
                                                  COMPONENT Runtime NAMELINK_COMPONENT Development)
  # The `cake` target's INSTALL_INTERFACE include directory (lib/CMakeLists.txt) is `include`.
  install(FILES ${PROJECT_SOURCE_DIR}/include/cake.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
          COMPONENT Development)
endfunction()

# lib/cmake/Cake: CakeTargets.cmake (the imported Cake::cake), CakeConfig.cmake and
# CakeConfigVersion.cmake (same major version: the SONAME's number).
function(cake_install_package_config)
  set(dir ${PROJECT_BINARY_DIR}/cmake)
  install(
    EXPORT CakeTargets
    NAMESPACE Cake::
    DESTINATION ${CAKE_INSTALL_CMAKEDIR}
    COMPONENT Development)
  configure_package_config_file(
    ${PROJECT_SOURCE_DIR}/cmake/CakeConfig.cmake.in ${dir}/CakeConfig.cmake
    INSTALL_DESTINATION ${CAKE_INSTALL_CMAKEDIR} PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
  write_basic_package_version_file(${dir}/CakeConfigVersion.cmake VERSION ${PROJECT_VERSION}
                                   COMPATIBILITY SameMajorVersion)
  install(FILES ${dir}/CakeConfig.cmake ${dir}/CakeConfigVersion.cmake
          DESTINATION ${CAKE_INSTALL_CMAKEDIR} COMPONENT Development)
endfunction()

# lib/pkgconfig/cake.pc. The prefix is the one given at install time (`cmake --install --prefix`
# may differ from CMAKE_INSTALL_PREFIX at configure time), so the file is finished then.
function(cake_install_pkgconfig)
  foreach(kind LIBDIR INCLUDEDIR)
    if(IS_ABSOLUTE ${CMAKE_INSTALL_${kind}})
      set(CAKE_PC_${kind} ${CMAKE_INSTALL_${kind}})
    else()
      set(CAKE_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
    endif()
  endforeach()
  set(CAKE_PC_PREFIX "@CAKE_PC_PREFIX@") # left for the install step to fill in
  set(partial ${PROJECT_BINARY_DIR}/cmake/cake.pc.in)
  set(final ${PROJECT_BINARY_DIR}/cmake/pkgconfig/cake.pc)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/cake.pc.in ${partial} @ONLY)
  install(CODE "set(CAKE_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
configure_file(\"${partial}\" \"${final}\" @ONLY)" COMPONENT Development)
  install(FILES ${final} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT Development)
endfunction()

cake_install_library()
cake_install_package_config()
cake_install_pkgconfig()

# The install_consumer test: install this build into a temporary prefix, then build and run
# cmake/test-consumer/ against it through find_package(Cake) and through pkg-config.
if(BUILD_TESTING)
  find_program(CAKE_PKG_CONFIG pkg-config)
  add_test(
    NAME install_consumer
    COMMAND
      ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR}
      -DWORK_DIR=${PROJECT_BINARY_DIR}/install-consumer
      -DSOURCE_DIR=${PROJECT_SOURCE_DIR}/cmake/test-consumer -DGENERATOR=${CMAKE_GENERATOR}
      -DCC=${CMAKE_C_COMPILER} -DPKG_CONFIG=${CAKE_PKG_CONFIG} -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
      -DVERSION=${PROJECT_VERSION} -P ${PROJECT_SOURCE_DIR}/cmake/test-consumer/run.cmake)
  # It runs `cmake --install` of this build folder, as bindings_rust_pkg_config does.
  set_tests_properties(install_consumer PROPERTIES RESOURCE_LOCK cake_install)
endif()
