# llhttp.cmake: builds Debian's node-llhttp 8.1 C sources into the static library
# goro_llhttp (alias llhttp::llhttp). Nothing is downloaded: the package ships the
# generated parser as plain C under /usr/share/llhttp and its header under
# /usr/share/include/llhttp. Override LLHTTP_SOURCE_DIR / LLHTTP_INCLUDE_DIR to
# point at another copy of the same three files.
#
# The library is compiled with LLHTTP_STRICT_MODE=1: the generated C holds two
# parsers, and only the strict one rejects whitespace before a header colon,
# control bytes in the URL and unterminated chunk data (framework/http/parser/parser.cpp
# lists what goro checks on top). It is not our code, so it gets no house
# warnings and no -Werror; it is exported with goro's targets because goro_http
# links it privately and a static library's private links are still installed.
include_guard(GLOBAL)

find_path(LLHTTP_INCLUDE_DIR llhttp.h
  PATHS /usr/share/include/llhttp
  DOC "Directory holding llhttp.h (Debian: node-llhttp)")
find_path(LLHTTP_SOURCE_DIR llhttp.c
  PATHS /usr/share/llhttp
  NO_DEFAULT_PATH
  DOC "Directory holding llhttp's api.c, http.c and llhttp.c (Debian: node-llhttp)")

set(_goro_llhttp_sources)
foreach(name api http llhttp)
  if(LLHTTP_SOURCE_DIR AND EXISTS ${LLHTTP_SOURCE_DIR}/${name}.c)
    list(APPEND _goro_llhttp_sources ${LLHTTP_SOURCE_DIR}/${name}.c)
  endif()
endforeach()
list(LENGTH _goro_llhttp_sources _goro_llhttp_count)
if(NOT LLHTTP_INCLUDE_DIR OR NOT _goro_llhttp_count EQUAL 3)
  message(FATAL_ERROR
    "llhttp not found: need llhttp.h (found in '${LLHTTP_INCLUDE_DIR}') and "
    "api.c, http.c, llhttp.c (found in '${LLHTTP_SOURCE_DIR}'). "
    "Install the Debian package node-llhttp, or set LLHTTP_INCLUDE_DIR and LLHTTP_SOURCE_DIR.")
endif()

file(STRINGS ${LLHTTP_INCLUDE_DIR}/llhttp.h _goro_llhttp_major REGEX "define LLHTTP_VERSION_MAJOR")
string(REGEX REPLACE ".*MAJOR ([0-9]+).*" "\\1" _goro_llhttp_major "${_goro_llhttp_major}")
if(NOT _goro_llhttp_major EQUAL 8)
  message(WARNING "goro's HTTP parser was checked against llhttp 8.x; found major ${_goro_llhttp_major}. "
                  "Re-run tests/http_parser before trusting the smuggling defences.")
endif()

add_library(goro_llhttp STATIC ${_goro_llhttp_sources})
add_library(llhttp::llhttp ALIAS goro_llhttp)
set_target_properties(goro_llhttp PROPERTIES
  EXPORT_NAME llhttp
  OUTPUT_NAME goro_llhttp
  C_STANDARD 99
  C_EXTENSIONS OFF)
target_compile_definitions(goro_llhttp PRIVATE LLHTTP_STRICT_MODE=1)
# Generated code: silence it rather than maintain it.
target_compile_options(goro_llhttp PRIVATE -w)
goro_lto_objects(goro_llhttp)  # GoroLto.cmake: part of the apps' request path
target_include_directories(goro_llhttp PUBLIC $<BUILD_INTERFACE:${LLHTTP_INCLUDE_DIR}>)
set_property(GLOBAL APPEND PROPERTY GORO_EXPORTED_TARGETS goro_llhttp)
# The fuzz target compiles the same files with clang outside this target.
set_property(GLOBAL PROPERTY GORO_LLHTTP_SOURCES ${_goro_llhttp_sources})
set_property(GLOBAL PROPERTY GORO_LLHTTP_INCLUDE_DIR ${LLHTTP_INCLUDE_DIR})
