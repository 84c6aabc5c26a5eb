# phew_warnings(target): the project's warning set.
function(phew_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
  # GCC 12 at -O3 reports overlapping or null memcpy/memmove deep inside std::string's operator+ and
  # std::vector<char>::insert, on paths that cannot run: its known false positives (-Wrestrict,
  # -Wnonnull), not phew's. Other compilers and versions keep both warnings.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-nonnull)
  endif()
  if(PHEW_WARNINGS_AS_ERRORS)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# phew_add_module(name SOURCES ... DEPENDS ... [PRIVATE_DEPENDS ...])
# One static library per lib/ folder, aliased phew::name, installed with its headers under
# include/phew/<name>/. Every phew header is included as <phew/<module>/<file>.hpp>, in the library as
# by its users: in the build tree that path resolves through the link include/phew -> lib (made in
# lib/CMakeLists.txt), once installed through the headers' own folder; either way only the folder
# above phew/ is on the include path.
# A module without SOURCES is headers only (lib/model): an INTERFACE library that carries its include
# path and its dependencies.
function(phew_add_module name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS;PRIVATE_DEPENDS" ${ARGN})
  if(ARG_SOURCES)
    add_library(phew_${name} STATIC ${ARG_SOURCES})
    set(scope PUBLIC)
  else()
    add_library(phew_${name} INTERFACE)
    set(scope INTERFACE)
  endif()
  add_library(phew::${name} ALIAS phew_${name})
  set_target_properties(phew_${name} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(phew_${name} ${scope}
    $<BUILD_INTERFACE:${PHEW_BUILD_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(phew_${name} ${scope} ${ARG_DEPENDS})
  if(ARG_SOURCES)
    target_link_libraries(phew_${name} PRIVATE ${ARG_PRIVATE_DEPENDS})
    phew_warnings(phew_${name})
  endif()
  install(TARGETS phew_${name} EXPORT phewTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/lib/${name}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/phew/${name}
    FILES_MATCHING PATTERN "*.hpp" PATTERN "*_private.hpp" EXCLUDE)
endfunction()

# phew_add_tool(name SOURCES main.cpp ... DEPENDS ...): an executable in build/bin/, installed. Every
# source but main.cpp goes into a library tool::<name> (the option table, check_options and the
# open -> stage -> write body), which the unit tests link to test check_options.
function(phew_add_tool name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPENDS" ${ARGN})
  set(body ${ARG_SOURCES})
  list(FILTER body EXCLUDE REGEX "/main\\.cpp$")
  set(main ${ARG_SOURCES})
  list(FILTER main INCLUDE REGEX "/main\\.cpp$")
  string(MAKE_C_IDENTIFIER "tool_${name}" lib)
  add_library(${lib} STATIC ${body})
  add_library(tool::${name} ALIAS ${lib})
  target_link_libraries(${lib} PUBLIC ${ARG_DEPENDS})
  target_include_directories(${lib} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/${name})
  phew_warnings(${lib})
  add_executable(${name} ${main})
  target_link_libraries(${name} PRIVATE ${lib})
  phew_warnings(${name})
  install(TARGETS ${name} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()
