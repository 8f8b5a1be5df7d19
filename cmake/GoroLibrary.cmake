# goro_add_library(NAME name SOURCES ...): a static library goro_<name>, aliased
# goro::<name>, built with the house warnings and exported for find_package(goro).
function(goro_add_library)
  cmake_parse_arguments(ARG "" "NAME" "SOURCES" ${ARGN})
  set(target goro_${ARG_NAME})
  add_library(${target} STATIC ${ARG_SOURCES})
  add_library(goro::${ARG_NAME} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${ARG_NAME} OUTPUT_NAME goro_${ARG_NAME})
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${PROJECT_SOURCE_DIR})
  goro_target_warnings(${target})
  goro_lto_objects(${target})  # GoroLto.cmake
  # Static, but position-independent (CMAKE_POSITION_INDEPENDENT_CODE: a
  # user may link goro into a shared object): with -fPIC alone GCC assumes
  # any exported function may be interposed at load time, so it never
  # inlines one into its callers in the same file (Request::live() into the
  # accessors beside it, say). goro's symbols are not meant to be
  # interposed; clang assumes as much already.
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANG_AND_ID:CXX,GNU>:-fno-semantic-interposition>)
  set_property(GLOBAL APPEND PROPERTY GORO_EXPORTED_TARGETS ${target})
endfunction()
