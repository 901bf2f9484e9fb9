# What `cmake --install BUILD --prefix PREFIX` puts under PREFIX (GNUInstallDirs' layout):
#   lib/libkiln.so                      the library
#   bin/kiln                            the command line, finding lib/libkiln.so through its RPATH
#   include/kiln/<layer>/...            every header of src/kiln/ in its kiln/... layout (test helpers
#                                       left out), and the generated typed API (kiln/ops/generated/)
#   lib/cmake/kiln/                     the CMake package: find_package(kiln) gives kiln::kiln
#   lib/pkgconfig/kiln.pc               the same for pkg-config
# Code kiln generates at run time includes the installed headers (compiler/codegen/build.h says how
# it finds them). docs/install.md shows a project using the package; tests/install builds one.
include(CMakePackageConfigHelpers)

set(KILN_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)

# The path from install directory `from` to `to` (relative to the prefix, or absolute), for files
# that must work wherever the prefix is: relative when both are, else `to` made absolute.
function(kiln_relative_install_path out from to)
  if(IS_ABSOLUTE "${to}")
    set(path "${to}")
  elseif(IS_ABSOLUTE "${from}")
    set(path "${CMAKE_INSTALL_PREFIX}/${to}")
  else()
    file(RELATIVE_PATH path /prefix/${from} /prefix/${to})
  endif()
  string(REGEX REPLACE "(.)/$" "\\1" path "${path}")
  set(${out} "${path}" PARENT_SCOPE)
endfunction()

# The library, and the command line with an RPATH to it ($ORIGIN: relative to bin/kiln itself).
# Libraries kiln links from outside the system's directories (oneDNN, fmt in a custom prefix) stay
# found through the RPATH of their link directories.
kiln_relative_install_path(lib_from_bin ${CMAKE_INSTALL_BINDIR} ${CMAKE_INSTALL_LIBDIR})
if(NOT IS_ABSOLUTE "${lib_from_bin}")
  set(lib_from_bin "$ORIGIN/${lib_from_bin}")
endif()
set_target_properties(kiln PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH "${lib_from_bin}" INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS kiln EXPORT kilnTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT python)
install(TARGETS kiln_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# The library and the headers are also part of the Python package: pip install . (pyproject.toml)
# installs the component "python" only, under kiln/ (lib/libkiln.so beside the module, include/).
# Headers. The test helpers include GoogleTest or zlib and are no part of the library's interface.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/src/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT python
        FILES_MATCHING PATTERN "*.h"
        PATTERN "*_for_tests.h" EXCLUDE
        PATTERN "*_test_util.h" EXCLUDE
        PATTERN "*_testing.h" EXCLUDE)
install(DIRECTORY ${PROJECT_BINARY_DIR}/generated/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT python
        FILES_MATCHING PATTERN "*.h" PATTERN "*.inc")

# The CMake package: targets (kiln::kiln), a config that finds the public dependencies again, and
# a version file (0.x: a new minor version may break the API, so only the same minor version matches).
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_INSTALL_CMAKEDIR} FILE kilnTargets.cmake)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kilnConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/package/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/package/kilnConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/package/kilnConfig.cmake ${PROJECT_BINARY_DIR}/package/kilnConfigVersion.cmake
        DESTINATION ${KILN_INSTALL_CMAKEDIR})

# pkg-config: the prefix is found from the .pc file's own place (${pcfiledir}), so it is right for
# any --prefix given at install time and after the prefix is moved.
kiln_relative_install_path(prefix_from_pc ${CMAKE_INSTALL_LIBDIR}/pkgconfig "")
if(IS_ABSOLUTE "${prefix_from_pc}")
  set(KILN_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  set(KILN_PC_PREFIX "\${pcfiledir}/${prefix_from_pc}")
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${dir}}")
    set(KILN_PC_${dir} "${CMAKE_INSTALL_${dir}}")
  else()
    set(KILN_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(KILN_PC_OPENMP "${OpenMP_CXX_FLAGS}")  # kernels/cpu/parallel.h uses OpenMP
configure_file(${PROJECT_SOURCE_DIR}/cmake/kiln.pc.in ${PROJECT_BINARY_DIR}/package/kiln.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/package/kiln.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
