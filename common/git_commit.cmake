# Writes OUT (a one-line C++ header) with the source tree's git commit, "+dirty" when the tree has
# uncommitted changes, or "unknown" outside a git checkout (e.g. a source tarball, a container
# build without .git) unless the build names one (-DGIVEN=<sha>). Rewritten only when the value
# changes, so that only the one translation unit including it is recompiled. Run at every build: cmake -DSRC=... -DOUT=... -P git_commit.cmake
set(commit "unknown")
find_program(GIT git)
if(NOT "${GIVEN}" STREQUAL "" AND NOT EXISTS "${SRC}/.git")
  # No .git (a container build): the commit the builder named (-DLLMLOAD_GIT_COMMIT).
  string(REGEX REPLACE "[^0-9A-Za-z.+_-]" "" commit "${GIVEN}")
elseif(GIT AND EXISTS "${SRC}/.git")
  execute_process(COMMAND "${GIT}" -C "${SRC}" rev-parse HEAD OUTPUT_VARIABLE head RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    set(commit "${head}")
    execute_process(COMMAND "${GIT}" -C "${SRC}" status --porcelain --untracked-files=no OUTPUT_VARIABLE dirty
                    RESULT_VARIABLE rc2 ERROR_QUIET)
    if(rc2 EQUAL 0 AND NOT dirty STREQUAL "")
      set(commit "${commit}+dirty")
    endif()
  endif()
endif()
set(text "#pragma once\n#define LLMLOAD_GIT_COMMIT \"${commit}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
