# kernelopt-llamacpp's slim build of an op (backend.cmake_args; docs/llamacpp.md): ggml-cuda
# without the .cu files KERNELOPT_SLIM_EXCLUDE names (a regex alternation of paths under
# ggml-cuda, no .cu: template-instances/mmq[^/]*|mmvq), which only matrix multiplications and
# attention call; empty: none left out. And test-backend-ops linked to ggml alone: llama.cpp's
# llama_build() links every test to libllama and llama-common (its TODO TAG_TESTS_LLAMA_LINK:
# the tool does not need libllama; it includes ggml's headers only), which with cpp-httplib
# were 450 of a fresh op build's 1126 compile-seconds on an H100
# (bench/results/2026-12-06-h100-llamacpp-slim).
# Included as CMAKE_PROJECT_ggml_INCLUDE, right after ggml's project(); the sources are
# filtered when ggml's directory is done, when the ggml-cuda target exists.
# The calls into a left-out instance stay undefined in libggml-cuda.so, bound lazily: an op
# that never reaches them runs as in a full build; one that does stops with the loader's
# "symbol lookup error" (tbo_output.py names it and says to rerun with --full-build).
if (NOT KERNELOPT_SLIM_DEFERRED)
  set(KERNELOPT_SLIM_DEFERRED ON)
  function(kernelopt_slim_sources)
    if ("${KERNELOPT_SLIM_EXCLUDE}" STREQUAL "")  # a matrix multiplication's: all of ggml-cuda
      return()
    endif()
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

  function(kernelopt_slim_tool_link)  # at the end of the top directory: the tests exist
    if (NOT TARGET test-backend-ops)
      return()
    endif()
    get_target_property(libs test-backend-ops LINK_LIBRARIES)
    set(dropped)
    foreach (lib llama llama-common common)
      if (lib IN_LIST libs)
        list(REMOVE_ITEM libs ${lib})
        list(APPEND dropped ${lib})
      endif()
    endforeach()
    if (NOT dropped)
      return()
    endif()
    if (NOT ggml IN_LIST libs)
      list(APPEND libs ggml)
    endif()
    # what llama-common gave the tool and ggml keeps private: C++17 (string_view) and threads
    # (std::thread, std::async); a recent GCC and glibc need neither, older ones both
    find_package(Threads)  # its flag, not its target: a target made here is not seen by tests/
    if (CMAKE_THREAD_LIBS_INIT)
      list(APPEND libs ${CMAKE_THREAD_LIBS_INIT})
    endif()
    set_property(TARGET test-backend-ops APPEND PROPERTY COMPILE_FEATURES cxx_std_17)
    set_property(TARGET test-backend-ops PROPERTY LINK_LIBRARIES ${libs})
    string(REPLACE ";" ", " dropped "${dropped}")
    message(STATUS "kernelopt slim build: test-backend-ops linked without ${dropped} (ggml alone)")
  endfunction()
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL kernelopt_slim_tool_link)

  # The tool's own object first. Ninja 1.12 and later run the ready step whose chain of steps to
  # the end is longest (every step weighs 1: ninja's EdgeWeightHeuristic), so
  # test-backend-ops.cpp.o (object, link: 2 steps) started only once every ggml object (up to 8
  # steps: object, library, its symlink, ..., the tool; 13 from ggml-base with the engine gate's
  # llama-bench and llama-completion) had started: at 27.8 s of a fresh NORM build, which its
  # 30.7 s compile then ended at 58.5 s (H200, bench/results/2026-12-06-h200-llamacpp-lean), and
  # at 133.5 s of 169.4 s for MUL_MAT's on an H100. A chain of 24 stamps between the object and
  # the tool's link (LINK_DEPENDS) makes its chain the longest, so ninja starts it first. The
  # stamps are empty files, made in milliseconds after the object; a candidate's relocated build
  # (kernelopt_core/warm_build.py) makes them again and relinks the tool, which its changed
  # libggml-cuda relinks anyway. Ninja only (a Makefile build has no rule for a stamp another
  # target makes, and make has no such priority); KERNELOPT_TOOL_FIRST=OFF leaves it out.
  function(kernelopt_slim_tool_first)
    if (NOT TARGET test-backend-ops OR NOT CMAKE_GENERATOR STREQUAL "Ninja"
        OR (DEFINED KERNELOPT_TOOL_FIRST AND NOT KERNELOPT_TOOL_FIRST))
      return()
    endif()
    execute_process(COMMAND "${CMAKE_MAKE_PROGRAM}" --version OUTPUT_VARIABLE ninja_version
                    OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" ninja_version "${ninja_version}")
    if (NOT ninja_version OR ninja_version VERSION_LESS 1.12)  # runs ready steps in file order
      message(STATUS "kernelopt slim build: ${CMAKE_MAKE_PROGRAM} (${ninja_version}) is not "
                     "ninja 1.12 or later: test-backend-ops.cpp is compiled when its turn comes")
      return()
    endif()
    set(previous "$<TARGET_OBJECTS:test-backend-ops>")
    foreach (step RANGE 1 24)
      set(stamp "${CMAKE_BINARY_DIR}/kernelopt-first/${step}.stamp")
      add_custom_command(OUTPUT "${stamp}" COMMAND "${CMAKE_COMMAND}" -E touch "${stamp}"
                         DEPENDS "${previous}" VERBATIM)
      set(previous "${stamp}")
    endforeach()
    add_custom_target(kernelopt_tool_first DEPENDS "${previous}")
    set_property(TARGET test-backend-ops APPEND PROPERTY LINK_DEPENDS "${previous}")
    message(STATUS "kernelopt slim build: test-backend-ops.cpp compiled first")
  endfunction()
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL kernelopt_slim_tool_first)
endif()
