# GLSL compute shaders compiled to SPIR-V at build time and embedded in a
# plugin as C arrays (no shader compiler at run time).
#
#   xhal_shader(<name> SOURCE <file.comp> [DEFINES A=1 B ...] [OPTIMIZE])
#       adds one shader (one source may be built several times with other
#       defines, under other names); OPTIMIZE (or the cache option
#       XHAL_SPIRV_OPT=ON for every shader) runs `spirv-opt -O` after glslang,
#       and the validator and the lint then check the optimised module;
#   xhal_embed_shaders(<target> INCLUDE_DIRS <dir>... HEADER <name.h>)
#       builds every shader added so far and gives <target> a generated
#       header <name.h> holding `xhal_spirv_<name>[]` word arrays and a table
#       of all of them (in the order they were added).
#
# Each shader goes through four steps, and any one failing fails the build:
#   1. glslangValidator -V --target-env vulkan1.2 (the --depfile keeps the
#      includes as dependencies);
#   2. spirv-val, the SPIR-V validator;
#   3. the arithmetic lint below, over spirv-dis output;
#   4. embedding into a header.
#
# The lint exists because one forgotten `precise` does not show on a driver
# that happens not to fuse a*b+c, and gives other bits on one that does. It
# fails when
#   - a float arithmetic result (OpFAdd, OpFSub, OpFMul, OpFDiv, OpFNegate,
#     OpFMod, OpFRem, OpVectorTimesScalar) lacks the NoContraction
#     decoration (GLSL `precise`);
#   - a shader uses an operation that Vulkan does not round correctly and
#     that the plugin rebuilds from exact operations instead: OpFDiv, OpDot,
#     GLSL.std.450 Sqrt, InverseSqrt, Exp, Exp2, Log, Log2, Pow, Fma, FMix;
#   - a shader lacks the RoundingModeRTE or SignedZeroInfNanPreserve
#     execution mode for 32-bit floats while doing float arithmetic.
#
# The same file is the script of steps 3 and 4 (cmake -P, with
# XHAL_SHADER_STEP=lint or embed).

if(CMAKE_SCRIPT_MODE_FILE)
  if(XHAL_SHADER_STEP STREQUAL "lint")
    file(STRINGS "${INPUT}" lines)
    set(precise_ids "")
    set(arith "")
    set(forbidden "")
    set(has_rte OFF)
    set(has_preserve OFF)
    foreach(line IN LISTS lines)
      if(line MATCHES "OpDecorate %([^ ]+) NoContraction")
        list(APPEND precise_ids "${CMAKE_MATCH_1}")
      elseif(line MATCHES "^ *%([^ ]+) = Op(FAdd|FSub|FMul|FDiv|FNegate|FMod|FRem|VectorTimesScalar) ")
        list(APPEND arith "${CMAKE_MATCH_1}:${CMAKE_MATCH_2}")
        if(CMAKE_MATCH_2 STREQUAL "FDiv")
          list(APPEND forbidden "OpFDiv (%${CMAKE_MATCH_1}); use xdiv()")
        endif()
      elseif(line MATCHES "^ *%([^ ]+) = OpDot ")
        list(APPEND forbidden "OpDot (%${CMAKE_MATCH_1})")
      elseif(line MATCHES "^ *%([^ ]+) = OpExtInst [^ ]+ [^ ]+ (Sqrt|InverseSqrt|Exp|Exp2|Log|Log2|Pow|Fma|FMix) ")
        list(APPEND forbidden "GLSL.std.450 ${CMAKE_MATCH_2} (%${CMAKE_MATCH_1}); use xsqrt()/xexp()")
      elseif(line MATCHES "OpExecutionMode %[^ ]+ RoundingModeRTE 32")
        set(has_rte ON)
      elseif(line MATCHES "OpExecutionMode %[^ ]+ SignedZeroInfNanPreserve 32")
        set(has_preserve ON)
      endif()
    endforeach()
    set(errors "")
    foreach(entry IN LISTS arith)
      string(REPLACE ":" ";" parts "${entry}")
      list(GET parts 0 id)
      list(GET parts 1 op)
      list(FIND precise_ids "${id}" found)
      if(found EQUAL -1)
        string(APPEND errors "\n  Op${op} %${id} lacks NoContraction (declare the result `precise`)")
      endif()
    endforeach()
    foreach(f IN LISTS forbidden)
      string(APPEND errors "\n  forbidden: ${f}")
    endforeach()
    if(arith AND NOT (has_rte AND has_preserve))
      string(APPEND errors "\n  float arithmetic without the RoundingModeRTE and SignedZeroInfNanPreserve execution modes (include common.glsl)")
    endif()
    if(errors)
      message(FATAL_ERROR "xhal shader lint: ${SHADER}:${errors}")
    endif()
    file(WRITE "${OUTPUT}" "ok\n")
  elseif(XHAL_SHADER_STEP STREQUAL "embed")
    file(READ "${INPUT}" hex HEX)
    string(LENGTH "${hex}" len)
    math(EXPR rem "${len} % 8")
    if(len EQUAL 0 OR NOT rem EQUAL 0)
      message(FATAL_ERROR "xhal shader embed: ${INPUT} is not a whole number of SPIR-V words")
    endif()
    # Little-endian words: bytes b0 b1 b2 b3 become 0xb3b2b1b0.
    string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
    string(REGEX REPLACE "((0x........u,){8})" "\\1\n" words "${words}")
    file(WRITE "${OUTPUT}"
         "// Generated from ${SHADER} by cmake/XhalShaders.cmake; do not edit.\n"
         "static const uint32_t xhal_spirv_${NAME}[] = {\n${words}};\n")
  else()
    message(FATAL_ERROR "XhalShaders.cmake: unknown XHAL_SHADER_STEP '${XHAL_SHADER_STEP}'")
  endif()
  return()
endif()

set(XHAL_SHADERS_SCRIPT ${CMAKE_CURRENT_LIST_FILE})
set(XHAL_SHADER_NAMES "" CACHE INTERNAL "")

function(xhal_shader name)
  cmake_parse_arguments(S "OPTIMIZE" "SOURCE" "DEFINES" ${ARGN})
  if(NOT S_SOURCE)
    message(FATAL_ERROR "xhal_shader(${name}): SOURCE is required")
  endif()
  get_filename_component(src "${S_SOURCE}" ABSOLUTE)
  set_property(GLOBAL APPEND PROPERTY XHAL_SHADER_LIST "${name}")
  set_property(GLOBAL PROPERTY XHAL_SHADER_SOURCE_${name} "${src}")
  set_property(GLOBAL PROPERTY XHAL_SHADER_DEFINES_${name} "${S_DEFINES}")
  set_property(GLOBAL PROPERTY XHAL_SHADER_OPTIMIZE_${name} "${S_OPTIMIZE}")
endfunction()

option(XHAL_SPIRV_OPT "Run spirv-opt -O on every shader (A/B of docs/vulkan.md)" OFF)

function(xhal_embed_shaders target)
  cmake_parse_arguments(E "" "HEADER" "INCLUDE_DIRS" ${ARGN})
  get_property(names GLOBAL PROPERTY XHAL_SHADER_LIST)
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/spirv)
  file(MAKE_DIRECTORY ${out_dir})
  set(includes "")
  foreach(dir IN LISTS E_INCLUDE_DIRS)
    get_filename_component(dir "${dir}" ABSOLUTE)
    list(APPEND includes "-I${dir}")
  endforeach()
  set(generated "")
  set(table "")
  set(enum_entries "")
  foreach(name IN LISTS names)
    get_property(src GLOBAL PROPERTY XHAL_SHADER_SOURCE_${name})
    get_property(defines GLOBAL PROPERTY XHAL_SHADER_DEFINES_${name})
    set(define_flags "")
    foreach(d IN LISTS defines)
      list(APPEND define_flags "-D${d}")
    endforeach()
    set(spv ${out_dir}/${name}.spv)
    get_property(optimize GLOBAL PROPERTY XHAL_SHADER_OPTIMIZE_${name})
    set(opt_step "")
    if(optimize OR XHAL_SPIRV_OPT)
      if(NOT XHAL_SPIRV_OPT_EXE)
        message(FATAL_ERROR "xhal_shader(${name}): OPTIMIZE needs spirv-opt (spirv-tools)")
      endif()
      set(opt_step COMMAND ${XHAL_SPIRV_OPT_EXE} --target-env=vulkan1.2 -O ${spv} -o ${spv})
    endif()
    set(dis ${out_dir}/${name}.spvasm)
    set(lint ${out_dir}/${name}.lint)
    set(inc ${out_dir}/${name}.spv.inc)
    add_custom_command(
      OUTPUT ${inc}
      COMMAND ${XHAL_GLSLANG} -V --target-env vulkan1.2 -S comp ${includes} ${define_flags}
              --depfile ${spv}.d -o ${spv} ${src}
      ${opt_step}
      COMMAND ${XHAL_SPIRV_VAL} --target-env vulkan1.2 ${spv}
      COMMAND ${XHAL_SPIRV_DIS} --raw-id -o ${dis} ${spv}
      COMMAND ${CMAKE_COMMAND} -DXHAL_SHADER_STEP=lint -DINPUT=${dis} -DOUTPUT=${lint}
              -DSHADER=${src} -P ${XHAL_SHADERS_SCRIPT}
      COMMAND ${CMAKE_COMMAND} -DXHAL_SHADER_STEP=embed -DINPUT=${spv} -DOUTPUT=${inc}
              -DSHADER=${src} -DNAME=${name} -P ${XHAL_SHADERS_SCRIPT}
      DEPENDS ${src} ${XHAL_SHADERS_SCRIPT}
      DEPFILE ${spv}.d
      COMMENT "SPIR-V ${name} (glslang, spirv-val, lint)"
      VERBATIM)
    list(APPEND generated ${inc})
    string(APPEND includes_text "#include \"spirv/${name}.spv.inc\"\n")
    string(APPEND table "  {\"${name}\", xhal_spirv_${name}, sizeof xhal_spirv_${name}},\n")
    string(APPEND enum_entries "  ${name},\n")
  endforeach()
  set(header ${CMAKE_CURRENT_BINARY_DIR}/${E_HEADER})
  file(GENERATE OUTPUT ${header} CONTENT
"// Generated by cmake/XhalShaders.cmake: every shader of ${target}, as SPIR-V words.
#pragma once
#include <cstddef>
#include <cstdint>
${includes_text}
namespace xhal_spirv {
enum Id : uint32_t {
${enum_entries}  kCount
};
struct Module {
  const char* name;
  const uint32_t* words;
  size_t bytes;
};
inline constexpr Module kModules[] = {
${table}};
}  // namespace xhal_spirv
")
  add_custom_target(${target}-spirv DEPENDS ${generated})
  add_dependencies(${target} ${target}-spirv)
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
endfunction()
