# The install_consumer test (cmake -P). Installs BUILD_DIR into WORK_DIR/prefix, checks what
# is there (files, SONAME links, no build-tree RPATH), builds and runs this folder's consumer
# through find_package(Cake) and then through pkg-config, and runs the installed cake-info.
# Arguments: BUILD_DIR WORK_DIR SOURCE_DIR GENERATOR CC PKG_CONFIG LIBDIR VERSION.
cmake_minimum_required(VERSION 3.22)
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})

function(run)
  execute_process(
    COMMAND ${ARGN}
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE out
    ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

string(REGEX MATCH "^[0-9]+" major ${VERSION})
set(lib ${prefix}/${LIBDIR})
foreach(
  f
  ${lib}/libcake.so.${VERSION} include/cake.h bin/cake-info ${LIBDIR}/cmake/Cake/CakeConfig.cmake
  ${LIBDIR}/cmake/Cake/CakeConfigVersion.cmake ${LIBDIR}/cmake/Cake/CakeTargets.cmake
  ${LIBDIR}/pkgconfig/cake.pc)
  if(NOT IS_ABSOLUTE ${f})
    set(f ${prefix}/${f})
  endif()
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
foreach(link libcake.so.${major} libcake.so)
  if(NOT IS_SYMLINK ${lib}/${link})
    message(FATAL_ERROR "not a symbolic link: ${lib}/${link}")
  endif()
endforeach()

# No build-tree RPATH: the library carries none at all, cake-info only $ORIGIN/../lib.
foreach(f ${lib}/libcake.so.${VERSION} ${prefix}/bin/cake-info)
  unset(rpath)
  unset(runpath)
  file(READ_ELF ${f} RPATH rpath RUNPATH runpath)
  set(paths "${rpath}${runpath}")
  string(FIND "${paths}" "${BUILD_DIR}" in_build)
  if(NOT in_build EQUAL -1 OR (f MATCHES "libcake" AND NOT paths STREQUAL ""))
    message(FATAL_ERROR "${f} carries RPATH/RUNPATH '${paths}'")
  endif()
endforeach()

# The installed cake-info finds the installed library by itself ($ORIGIN/../lib).
run(${prefix}/bin/cake-info --json)
if(NOT out MATCHES "\"table\": \"sm90\"")
  message(FATAL_ERROR "installed cake-info --json printed no sm90 table")
endif()

# 1. CMake: find_package(Cake 0.1) from the prefix only (no package registry).
run(${CMAKE_COMMAND}
    -S
    ${SOURCE_DIR}
    -B
    ${WORK_DIR}/cmake-build
    -G
    ${GENERATOR}
    -DCMAKE_C_COMPILER=${CC}
    -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
    -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(NOT out MATCHES "Cake ${VERSION} from ${prefix}/")
  message(FATAL_ERROR "find_package(Cake) did not find the installed prefix:\n${out}")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/cmake-build)
run(${WORK_DIR}/cmake-build/consumer)
message(STATUS "find_package(Cake): ${out}")

# 2. pkg-config, as a user would type it.
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "pkg-config not found")
endif()
set(ENV{PKG_CONFIG_PATH} ${lib}/pkgconfig)
run(${PKG_CONFIG} --cflags --libs cake)
string(STRIP "${out}" flags)
if(NOT flags STREQUAL "-I${prefix}/include -L${lib} -lcake")
  message(FATAL_ERROR "pkg-config --cflags --libs cake: ${flags}")
endif()
run(sh
    -c
    "${CC} ${SOURCE_DIR}/consumer.c -o ${WORK_DIR}/consumer-pc $(${PKG_CONFIG} --cflags --libs cake)"
)
set(ENV{LD_LIBRARY_PATH} ${lib})
run(${WORK_DIR}/consumer-pc)
message(STATUS "pkg-config: ${out}")
