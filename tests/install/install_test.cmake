# kiln as an installed package, end to end (run by CTest: tests/install/CMakeLists.txt passes the
# variables). Each step fails the test with its name and output:
#   1. `cmake --install BUILD_DIR --prefix WORK_DIR/prefix`;
#   2. every header of src/kiln/ (test helpers aside) and the generated API is installed, and every
#      `#include "..."` in an installed header resolves inside the prefix;
#   3. the installed `kiln` runs (it finds lib/libkiln.so through its RPATH);
#   4. project/ is configured with find_package(kiln) (from this prefix), built and run: its
#      kiln::compile builds generated C++ against the installed headers, with KILN_INCLUDE_DIR unset
#      and an empty kernel cache, and it must print the prefix's include directory and OK;
#   5. the same main.cpp is built with `pkg-config --cflags --libs kiln` and run (skipped, saying so,
#      where pkg-config is missing).
foreach(var SOURCE_DIR BUILD_DIR WORK_DIR PROJECT_DIR GENERATOR CXX BINDIR LIBDIR INCLUDEDIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

# Runs ARGN; a non-zero exit fails the test, naming the step. Its stdout is left in STEP_OUTPUT.
function(step name)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "kiln_install_test: ${name} failed (${rc}):\n${command}\n${out}${err}")
  endif()
  message(STATUS "kiln_install_test: ${name}: done")
  set(STEP_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

function(expect_in text pattern what)
  string(FIND "${text}" "${pattern}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "kiln_install_test: ${what}: '${pattern}' not in:\n${text}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
set(include ${prefix}/${INCLUDEDIR})
# Programs using the installed kiln run with no pointer to the source tree or the build tree.
set(user_env ${CMAKE_COMMAND} -E env --unset=KILN_INCLUDE_DIR --unset=LD_LIBRARY_PATH KILN_CACHE_DIR=${WORK_DIR}/cache)

# 1. Install.
step("cmake --install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})

# 2. Headers: all of them, and nothing they include is missing.
file(GLOB_RECURSE source_headers RELATIVE ${SOURCE_DIR}/src ${SOURCE_DIR}/src/kiln/*.h)
list(FILTER source_headers EXCLUDE REGEX "(_for_tests|_test_util|_testing)\\.h$")
file(GLOB_RECURSE generated_headers RELATIVE ${BUILD_DIR}/generated ${BUILD_DIR}/generated/kiln/*.h
     ${BUILD_DIR}/generated/kiln/*.inc)
set(missing "")
foreach(header IN LISTS source_headers generated_headers)
  if(NOT EXISTS ${include}/${header})
    string(APPEND missing "  ${header} (not installed)\n")
  endif()
endforeach()
file(GLOB_RECURSE installed ${include}/kiln/*.h ${include}/kiln/*.inc)
foreach(header IN LISTS installed)
  get_filename_component(dir ${header} DIRECTORY)
  file(STRINGS ${header} lines REGEX "^[ \t]*#[ \t]*include[ \t]*\"")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^[ \t]*#[ \t]*include[ \t]*\"([^\"]+)\".*" "\\1" name "${line}")
    if(NOT EXISTS ${include}/${name} AND NOT EXISTS ${dir}/${name})
      file(RELATIVE_PATH from ${include} ${header})
      string(APPEND missing "  ${name} (included by ${from})\n")
    endif()
  endforeach()
endforeach()
if(missing)
  message(FATAL_ERROR "kiln_install_test: headers missing under ${include}:\n${missing}")
endif()
list(LENGTH installed count)
message(STATUS "kiln_install_test: ${count} headers installed, their includes all resolve")

# 3. The command line, through its RPATH.
step("installed kiln ops" ${user_env} ${prefix}/${BINDIR}/kiln ops --format tsv)
expect_in("${STEP_OUTPUT}" "add.Tensor" "kiln ops")

# 4. An outside CMake project.
file(REAL_PATH ${include} real_include)
set(generator_args -G ${GENERATOR})
if(MAKE_PROGRAM)
  list(APPEND generator_args -DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM})
endif()
step("configuring project/ with find_package(kiln)"
     ${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR}/app ${generator_args} -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}" -DCMAKE_PREFIX_PATH=${prefix}
     -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_COMPILE_WARNING_AS_ERROR=ON)
expect_in("${STEP_OUTPUT}" "from ${prefix}/" "find_package(kiln) found another kiln")
step("building project/" ${CMAKE_COMMAND} --build ${WORK_DIR}/app)
step("running project/'s app" ${user_env} ${WORK_DIR}/app/app)
expect_in("${STEP_OUTPUT}" "kiln headers for generated code: ${real_include}\n" "app (CMake)")
expect_in("${STEP_OUTPUT}" "\nOK\n" "app (CMake)")
file(GLOB_RECURSE compiled ${WORK_DIR}/cache/*.so)
if(NOT compiled)
  message(FATAL_ERROR "kiln_install_test: the app compiled no code into ${WORK_DIR}/cache")
endif()

# 5. pkg-config.
find_program(PKG_CONFIG NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG)
  message(STATUS "kiln_install_test: SKIPPED the pkg-config half: no pkg-config (scripts/setup.sh installs it)")
  return()
endif()
step("pkg-config --cflags --libs kiln"
     ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${prefix}/${LIBDIR}/pkgconfig ${PKG_CONFIG} --cflags --libs kiln)
string(STRIP "${STEP_OUTPUT}" pc_flags)
expect_in("${pc_flags}" "-lkiln" "pkg-config")
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(extra_flags UNIX_COMMAND "${CXX_FLAGS}")
step("building main.cpp with pkg-config's flags"
     ${CXX} -std=c++20 -O1 -Wall -Wextra -Werror ${extra_flags} ${PROJECT_DIR}/main.cpp -o ${WORK_DIR}/app_pc
     ${pc_flags} -Wl,-rpath,${prefix}/${LIBDIR})
step("running the pkg-config build" ${user_env} ${WORK_DIR}/app_pc)
expect_in("${STEP_OUTPUT}" "\nOK\n" "app (pkg-config)")
