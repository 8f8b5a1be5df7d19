# Sanitizer builds apply to every target in the tree (goro, tests, apps) so the
# runtime's fiber annotations and the code they annotate are instrumented alike.
if(GORO_SANITIZE STREQUAL "address")
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
  add_compile_definitions(GORO_ASAN=1)
elseif(GORO_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
  add_compile_definitions(GORO_TSAN=1)
elseif(NOT GORO_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GORO_SANITIZE must be '', 'address' or 'thread', not '${GORO_SANITIZE}'")
endif()
if(GORO_SCHED_PERTURB)
  add_compile_definitions(GORO_SCHED_PERTURB=1)
endif()
