# Link-time optimization for the apps (docs/DESIGN.md "Link-time
# optimization"). With GORO_LTO on, goro's libraries are compiled as fat LTO
# objects (GCC's -ffat-lto-objects: the usual machine code plus the
# compiler's intermediate form), and the apps are linked with -flto, so the
# compiler sees the request's whole path at once (a socket call through
# net::Conn, NetFd and the netpoller; the parser's helpers across files)
# and inlines across the files. Everything else in this tree (the tests, the
# benchmarks, the examples) links the machine code with no LTO step, so the
# release suite does not pay a whole-program optimization per test. That
# takes -fno-lto at the link: GCC's linker plugin finds the intermediate form
# in the fat objects and, without it, optimizes the whole program at every
# link (12.5 s against 0.7 s for one test binary here; 115 links).
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

if(GORO_LTO)
  # Every executable and shared object made in goro's tree from here on,
  # except those goro_lto_link marks: GCC's driver skips LTO when -fno-lto is
  # anywhere on the line, even before a -flto.
  add_link_options("$<$<NOT:$<BOOL:$<TARGET_PROPERTY:GORO_LTO_LINKED>>>:-fno-lto>")
  # The archives' symbol index must name what the machine code defines. GNU
  # ar loads GCC's LTO plugin on its own (from bfd-plugins) and indexes a fat
  # object by its intermediate form, which also lists the inline functions
  # (std::string's, say) that the machine code inlined and never emitted.
  # A link without LTO that names an archive twice (CMake repeats a library
  # after one that depends on it) then takes such an object again from the
  # second copy for a symbol it still lacks, and fails on every symbol the
  # object defines. So the archive is written without an index and indexed
  # with the plugin pointed at a file that does not exist: ar loads none
  # and reads the ELF symbols. The LTO links still find every member by
  # them: each function the intermediate form defines out of line, the
  # machine code defines too.
  foreach(_goro_lang C CXX)
    set(CMAKE_${_goro_lang}_ARCHIVE_CREATE "<CMAKE_AR> qcS <TARGET> <LINK_FLAGS> <OBJECTS>")
    set(CMAKE_${_goro_lang}_ARCHIVE_APPEND "<CMAKE_AR> qS <TARGET> <LINK_FLAGS> <OBJECTS>")
    set(CMAKE_${_goro_lang}_ARCHIVE_FINISH
        "<CMAKE_AR> --plugin ${CMAKE_BINARY_DIR}/no-lto-plugin s <TARGET>")
  endforeach()
endif()

function(goro_lto_objects target)
  if(GORO_LTO)
    target_compile_options(${target} PRIVATE -flto=auto -ffat-lto-objects)
  endif()
endfunction()

function(goro_lto_link target)
  if(GORO_LTO)
    goro_lto_objects(${target})
    set_property(TARGET ${target} PROPERTY GORO_LTO_LINKED ON)
    target_link_options(${target} PRIVATE -flto=auto)
  endif()
endfunction()
