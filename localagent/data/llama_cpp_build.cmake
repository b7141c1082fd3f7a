# What of llama.cpp to compile for localagent: the CPU code for seven x86-64 generations instead of
# fourteen, and none of the `llama-common` library, which llama-cpp-python builds but never loads.
#
# README's install passes this file as CMAKE_PROJECT_INCLUDE, with GGML_BACKEND_DL=ON and
# GGML_CPU_ALL_VARIANTS=ON. ggml has no option for a subset of its CPU variants, so at the end of
# the configure step each target left out is given one empty source file and no libraries: its
# library then holds no code and no `ggml_backend_score`, so ggml's loader and localagent's pass it
# over. A CPU older than every variant kept runs the portable x64 code.
include_guard(GLOBAL)

set(LOCALAGENT_CPU_VARIANTS "x64;haswell;alderlake;skylakex;cascadelake;icelake;zen4"
    CACHE STRING "llama.cpp CPU variants compiled with their code; the others are left empty")
set(LOCALAGENT_EMPTY_TARGETS "llama-common"
    CACHE STRING "Targets llama-cpp-python builds that localagent never loads, left empty")

function(_localagent_leave_out_unused_code)
    set(empty_source "${CMAKE_BINARY_DIR}/localagent_empty.c")
    file(WRITE "${empty_source}" "typedef int localagent_left_out;\n")
    set(left_out ${LOCALAGENT_EMPTY_TARGETS})
    foreach(variant IN ITEMS x64 sse42 sandybridge ivybridge piledriver haswell skylakex cannonlake
                             cascadelake icelake cooperlake zen4 alderlake sapphirerapids)
        if(NOT variant IN_LIST LOCALAGENT_CPU_VARIANTS)
            list(APPEND left_out ggml-cpu-${variant})
        endif()
    endforeach()
    foreach(target IN LISTS left_out)
        if(TARGET ${target})
            set_property(TARGET ${target} PROPERTY SOURCES "${empty_source}")
            set_property(TARGET ${target} PROPERTY LINK_LIBRARIES "")
        endif()
    endforeach()
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _localagent_leave_out_unused_code)
