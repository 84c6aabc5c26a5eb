# Writes lib/core/version.cpp from version.cpp.in. Run with `cmake -P` on every build, not once at
# configure time: the commit in --version and in every manifest's "tool" entry must be the one that
# was built, also after `git commit` and an incremental rebuild. configure_file() leaves the output
# untouched when nothing changed, so an unchanged commit costs no recompilation.
#
# In: SOURCE_DIR, GIT_EXECUTABLE (may be empty), INPUT, OUTPUT, PHEW_VERSION, PHEW_COMPILER,
#     PHEW_BUILD_TYPE.
set(PHEW_GIT_COMMIT "")
if(GIT_EXECUTABLE AND EXISTS "${SOURCE_DIR}/.git")
  execute_process(COMMAND "${GIT_EXECUTABLE}" describe --always --dirty --abbrev=12
    WORKING_DIRECTORY "${SOURCE_DIR}" OUTPUT_VARIABLE PHEW_GIT_COMMIT
    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
configure_file("${INPUT}" "${OUTPUT}" @ONLY)
