# kernelopt-llamacpp's slim build of an op (backend.cmake_args; docs/llamacpp.md): ggml-cuda
# without the .cu files KERNELOPT_SLIM_EXCLUDE names (a regex alternation of paths under
# ggml-cuda, no .cu: template-instances/mmq[^/]*|mmvq), which only matrix multiplications and
# attention call.
# Included as CMAKE_PROJECT_ggml_INCLUDE, right after ggml's project(); the sources are
# filtered when ggml's directory is done, when the ggml-cuda target exists.
# The calls into a left-out instance stay undefined in libggml-cuda.so, bound lazily: an op
# that never reaches them runs as in a full build; one that does stops with the loader's
# "symbol lookup error" (tbo_output.py names it and says to rerun with --full-build).
if (NOT KERNELOPT_SLIM_DEFERRED)
  set(KERNELOPT_SLIM_DEFERRED ON)
  function(kernelopt_slim_sources)
    if (NOT TARGET ggml-cuda)
      message(WARNING "kernelopt slim build: no ggml-cuda target: nothing left out")
      return()
    endif()
    get_target_property(sources ggml-cuda SOURCES)
    list(LENGTH sources before)
    list(FILTER sources EXCLUDE REGEX "/ggml-cuda/(${KERNELOPT_SLIM_EXCLUDE})\\.cu$")
    list(LENGTH sources after)
    set_property(TARGET ggml-cuda PROPERTY SOURCES ${sources})
    math(EXPR left_out "${before} - ${after}")
    if (left_out EQUAL 0)  # another layout: the build is whole, whatever its label says
      message(WARNING "kernelopt slim build: no file of ggml-cuda matched (${KERNELOPT_SLIM_EXCLUDE}): nothing left out")
    else()
      message(STATUS "kernelopt slim build: ${left_out} files of ggml-cuda left out (${KERNELOPT_SLIM_EXCLUDE})")
    endif()
  endfunction()
  cmake_language(DEFER DIRECTORY "${CMAKE_CURRENT_SOURCE_DIR}" CALL kernelopt_slim_sources)
endif()
