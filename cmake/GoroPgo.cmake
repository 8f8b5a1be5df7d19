# Profile-guided optimization (docs/DESIGN.md "Profile-guided
# optimization"), GCC only, off unless asked for. scripts/pgo.sh runs the
# three steps in one build tree:
#   GORO_PGO=generate  every target is compiled and linked with
#                      -fprofile-generate=GORO_PGO_DIR: the programs count
#                      their branches and calls, and write the counts into
#                      GORO_PGO_DIR when they exit normally;
#   (a training run of the program under the load it is built for);
#   GORO_PGO=use       the same tree rebuilt with -fprofile-use=GORO_PGO_DIR:
#                      GCC lays out, inlines and unrolls by the counts.
# The profile's file names are the objects' absolute paths, so both builds
# must be the same tree. -fprofile-partial-training: a function the training
# never ran (TLS's, say) is optimized as without a profile, not as cold; the
# unrun branches of a function that did run are still laid out as cold. A
# source file changed after the training run makes GCC stop with a
# coverage-mismatch error: train again.
include_guard(GLOBAL)

set(GORO_PGO "" CACHE STRING "Profile-guided optimization: empty (off), generate or use")
set_property(CACHE GORO_PGO PROPERTY STRINGS "" generate use)
set(GORO_PGO_DIR "${CMAKE_BINARY_DIR}/pgo-profile" CACHE PATH
    "Where GORO_PGO=generate's programs write their profiles and GORO_PGO=use reads them")

if(GORO_PGO STREQUAL "")
  return()
endif()
if(NOT (CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_C_COMPILER_ID STREQUAL "GNU"))
  message(FATAL_ERROR "GORO_PGO needs GCC; turn it off for ${CMAKE_CXX_COMPILER_ID}")
endif()
if(NOT GORO_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GORO_PGO is for release builds; turn it off with GORO_SANITIZE")
endif()
string(TOLOWER "${CMAKE_BUILD_TYPE}" _goro_pgo_build_type)
if(NOT _goro_pgo_build_type STREQUAL "release")
  message(FATAL_ERROR "GORO_PGO is for release builds; CMAKE_BUILD_TYPE is '${CMAKE_BUILD_TYPE}'")
endif()
# The options below reach only goro's own targets. In a service's project
# (add_subdirectory) its executable would link goro's instrumented objects
# without the profiling runtime: a service profiles its whole build with its
# own CMAKE_C_FLAGS/CMAKE_CXX_FLAGS/CMAKE_EXE_LINKER_FLAGS instead.
if(NOT GORO_IS_TOP_LEVEL)
  message(FATAL_ERROR "GORO_PGO works only when goro is the top-level project; a service sets "
                      "-fprofile-generate / -fprofile-use in its own flags (docs/DESIGN.md)")
endif()
if(GORO_PGO STREQUAL "generate")
  # prefer-atomic: the counters are shared by every thread (each M is one).
  add_compile_options("-fprofile-generate=${GORO_PGO_DIR}" -fprofile-update=prefer-atomic)
  add_link_options("-fprofile-generate=${GORO_PGO_DIR}")
elseif(GORO_PGO STREQUAL "use")
  if(NOT IS_DIRECTORY "${GORO_PGO_DIR}")
    message(FATAL_ERROR "GORO_PGO=use: no profile in GORO_PGO_DIR (${GORO_PGO_DIR}); "
                        "build with GORO_PGO=generate and run the program first (scripts/pgo.sh)")
  endif()
  add_compile_options("-fprofile-use=${GORO_PGO_DIR}" -fprofile-partial-training
                      -Wno-missing-profile)
  add_link_options("-fprofile-use=${GORO_PGO_DIR}" -fprofile-partial-training)
else()
  message(FATAL_ERROR "GORO_PGO is '${GORO_PGO}': expected empty, generate or use")
endif()
