# Compilers known to produce wrong code for phew must never give a silently wrong parallel result.
#
# GCC 12.2 (Debian 12) miscompiles a loop that fills arrays and their prefix sums together when
# -ftree-loop-distribution is on (the default at -O3): see cmake/loop_distribution_check.cpp. phew's
# own code no longer has that shape, but the pass could meet it again anywhere. So the reduction is
# compiled and run here with the flags of this build; when the compiler gets it wrong, the pass is
# switched off for the whole project and configure says so. Checked: GCC 12.2.0 (-O3: wrong, fixed by
# the flag; -O2: right), clang 14 (right). docs/building.md lists the compilers and what was done.
# -DPHEW_TOOLCHAIN_GUARD=OFF still runs the check but leaves the pass on: only for checking that phew's
# own code does not depend on the guard (docs/building.md), never for a build that computes results.
function(phew_guard_loop_distribution)
  string(TOUPPER "${CMAKE_BUILD_TYPE}" config)
  set(flags "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${config}}")
  separate_arguments(flag_list UNIX_COMMAND "${flags}")
  try_run(run_result compile_result
    ${CMAKE_BINARY_DIR}/toolchain-guard ${PROJECT_SOURCE_DIR}/cmake/loop_distribution_check.cpp
    COMPILE_DEFINITIONS ${flag_list}
    COMPILE_OUTPUT_VARIABLE compile_output
    RUN_OUTPUT_VARIABLE run_output)
  if(NOT compile_result)
    message(FATAL_ERROR "toolchain guard: cannot compile cmake/loop_distribution_check.cpp:\n${compile_output}")
  endif()
  if(run_result EQUAL 0)
    set(PHEW_LOOP_DISTRIBUTION_GUARD "not needed" CACHE INTERNAL "")
    message(STATUS "Toolchain guard: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} compiles the loop-distribution reduction right at '${flags}'")
    return()
  endif()
  # Wrong code: is it the loop-distribution pass? Then switch it off everywhere.
  try_run(run_fixed compile_fixed
    ${CMAKE_BINARY_DIR}/toolchain-guard ${PROJECT_SOURCE_DIR}/cmake/loop_distribution_check.cpp
    COMPILE_DEFINITIONS ${flag_list} -fno-tree-loop-distribution)
  if(NOT (compile_fixed AND run_fixed EQUAL 0))
    message(FATAL_ERROR "toolchain guard: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} miscompiles "
      "cmake/loop_distribution_check.cpp at '${flags}' (${run_output}), even with -fno-tree-loop-distribution. "
      "Use another compiler or build type (e.g. -DCMAKE_BUILD_TYPE=RelWithDebInfo).")
  endif()
  string(STRIP "${run_output}" run_output)
  if(NOT PHEW_TOOLCHAIN_GUARD)
    set(PHEW_LOOP_DISTRIBUTION_GUARD "needed, switched off" CACHE INTERNAL "")
    message(WARNING "Toolchain guard: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} miscompiles loop "
      "distribution at '${flags}' (${run_output}), and PHEW_TOOLCHAIN_GUARD=OFF leaves it on: a build for "
      "checking phew's own code only.")
    return()
  endif()
  add_compile_options(-fno-tree-loop-distribution)
  set(PHEW_LOOP_DISTRIBUTION_GUARD "-fno-tree-loop-distribution" CACHE INTERNAL "")
  message(STATUS "Toolchain guard: ${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION} miscompiles loop "
    "distribution at '${flags}' (${run_output}); building phew with -fno-tree-loop-distribution.")
endfunction()
