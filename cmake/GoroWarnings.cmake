# goro_target_warnings(target): the house warning set; -Werror when GORO_WERROR (CI, presets).
function(goro_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-missing-field-initializers)
  if(GORO_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
