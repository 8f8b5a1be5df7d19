# Link-time optimization for the apps (docs/DESIGN.md "Link-time
# optimization"). With GORO_LTO on, goro's libraries are compiled as fat LTO
# objects (GCC's -ffat-lto-objects: the usual machine code plus the
# compiler's intermediate form), and the apps are linked with -flto, so the
# compiler sees the request's whole path at once (a socket call through
# net::Conn, NetFd and the netpoller; the parser's helpers across files)
# and inlines across the files. Everything else (the tests, the benchmarks,
# a user's program) links the machine code as before, with no LTO step:
# the release suite does not pay a whole-program optimization per test.
#   goro_lto_objects(target): compile the target's sources as fat LTO objects
#   goro_lto_link(target):    and link it with -flto (an executable)
# On by default for a top-level GCC release build without sanitizers; clang
# and the other presets build exactly as before.
include_guard(GLOBAL)

set(_goro_lto_gcc OFF)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_C_COMPILER_ID STREQUAL "GNU")
  set(_goro_lto_gcc ON)
endif()
set(_goro_lto_default OFF)
if(GORO_IS_TOP_LEVEL AND _goro_lto_gcc AND CMAKE_BUILD_TYPE STREQUAL "Release"
   AND GORO_SANITIZE STREQUAL "")
  set(_goro_lto_default ON)
endif()
option(GORO_LTO "Link the apps with link-time optimization (GCC: libraries as fat LTO objects)"
       ${_goro_lto_default})
if(GORO_LTO AND NOT _goro_lto_gcc)
  message(FATAL_ERROR "GORO_LTO needs GCC (fat LTO objects); turn it off for ${CMAKE_CXX_COMPILER_ID}")
endif()

function(goro_lto_objects target)
  if(GORO_LTO)
    target_compile_options(${target} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endfunction()

function(goro_lto_link target)
  if(GORO_LTO)
    goro_lto_objects(${target})
    target_link_options(${target} PRIVATE -flto=auto)
  endif()
endfunction()
