# What of llama.cpp README's install compiles: the CPU code for this machine's CPU and the portable
# x86-64 code, instead of fourteen generations' worth, and none of the `llama-common` library, which
# llama-cpp-python builds but never loads. It halves the install's time on two cores.
#
# README passes this file as CMAKE_PROJECT_INCLUDE, with GGML_BACKEND_DL=ON and
# GGML_CPU_ALL_VARIANTS=ON. ggml has no option for a subset of its CPU variants, so at the end of the
# configure step each target left out gets one empty source file and no libraries: its library then
# holds no code and no `ggml_backend_score`, and ggml's loader and localagent's both pass it over.
# The variant kept for this CPU is the first of ggml's x86-64 variants, widest first, whose
# instructions /proc/cpuinfo lists (never `sapphirerapids`, whose AMX code crashes). A wheel taken to
# a CPU that lacks them runs the portable code, and localagent says so. To build for many machines,
# pass -DLOCALAGENT_CPU_VARIANTS="x64;haswell;skylakex;..." (ggml's names), or leave this file out.
include_guard(GLOBAL)

set(_localagent_x86_variants x64 sse42 sandybridge ivybridge piledriver haswell skylakex cannonlake
    cascadelake icelake cooperlake zen4 alderlake sapphirerapids)

# The /proc/cpuinfo flags each variant needs, for the variants that may be kept for a CPU.
set(_localagent_avx2 avx2 fma f16c bmi2)
set(_localagent_avx512 ${_localagent_avx2} avx512f avx512cd avx512vl avx512dq avx512bw)
set(_localagent_needs_zen4 ${_localagent_avx512} avx512vbmi avx512_vnni avx512_bf16)
set(_localagent_needs_cooperlake ${_localagent_avx512} avx512_vnni avx512_bf16)
set(_localagent_needs_icelake ${_localagent_avx512} avx512vbmi avx512_vnni)
set(_localagent_needs_cascadelake ${_localagent_avx512} avx512_vnni)
set(_localagent_needs_cannonlake ${_localagent_avx512} avx512vbmi)
set(_localagent_needs_skylakex ${_localagent_avx512})
set(_localagent_needs_alderlake ${_localagent_avx2} avx_vnni)
set(_localagent_needs_haswell ${_localagent_avx2})
set(_localagent_needs_piledriver fma f16c)
set(_localagent_needs_ivybridge f16c)
set(_localagent_needs_sandybridge avx)
set(_localagent_needs_sse42 sse4_2)

function(_localagent_variant_for_this_cpu result)
    set(${result} "" PARENT_SCOPE)
    if(NOT EXISTS /proc/cpuinfo)
        return()
    endif()
    file(STRINGS /proc/cpuinfo flag_lines REGEX "^flags[ \t]*:" LIMIT_COUNT 1)
    if(NOT flag_lines)
        return()
    endif()
    string(REGEX REPLACE "^flags[ \t]*:[ \t]*" "" flags "${flag_lines}")
    string(REPLACE " " ";" flags "${flags}")
    foreach(variant IN ITEMS zen4 cooperlake icelake cascadelake cannonlake skylakex alderlake haswell
                             piledriver ivybridge sandybridge sse42)
        set(runs TRUE)
        foreach(flag IN LISTS _localagent_needs_${variant})
            if(NOT flag IN_LIST flags)
                set(runs FALSE)
            endif()
        endforeach()
        if(runs)
            set(${result} ${variant} PARENT_SCOPE)
            return()
        endif()
    endforeach()
endfunction()

if(NOT DEFINED LOCALAGENT_CPU_VARIANTS)
    _localagent_variant_for_this_cpu(_localagent_this_cpu)
    if(_localagent_this_cpu)
        set(LOCALAGENT_CPU_VARIANTS "x64;${_localagent_this_cpu}")
    else()
        set(LOCALAGENT_CPU_VARIANTS "${_localagent_x86_variants}")  # no /proc/cpuinfo: keep them all
    endif()
endif()
message(STATUS "localagent: llama.cpp CPU variants compiled: ${LOCALAGENT_CPU_VARIANTS}")

function(_localagent_leave_out_unused_code)
    set(empty_source "${CMAKE_BINARY_DIR}/localagent_empty.c")
    file(WRITE "${empty_source}" "typedef int localagent_left_out;\n")
    set(left_out llama-common)
    foreach(variant IN LISTS _localagent_x86_variants)
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
