# cmake -DSRC=DIR -DOUT=FILE -P git_version.cmake: FILE (a C header) says
# which commit prism is built from, as `git describe --always --dirty`
# reads it in DIR (PRISM_GIT "6e15fda", "6e15fda-dirty" where the working
# tree holds uncommitted changes), or "" where DIR is no git checkout (a
# source tarball).  Run at every build; FILE is rewritten only when that
# changes, so nothing recompiles otherwise.
set(desc "")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SRC} describe --always --dirty --abbrev=12
                  OUTPUT_VARIABLE desc OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc ERROR_QUIET)
  if(NOT rc EQUAL 0)
    set(desc "")
  endif()
endif()
string(REGEX REPLACE "[^A-Za-z0-9._-]" "?" desc "${desc}")
set(text "/* Made by scripts/git_version.cmake at build time. */\n#define PRISM_GIT \"${desc}\"\n")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
else()
  set(old "")
endif()
if(NOT old STREQUAL text)
  file(WRITE ${OUT} "${text}")
endif()
