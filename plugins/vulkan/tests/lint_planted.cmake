cmake_minimum_required(VERSION 3.25)
# Compiles lint_planted.comp as the build does and expects the lint of
# cmake/XhalShaders.cmake to refuse it.
set(spv ${WORK}/lint_planted.spv)
set(dis ${WORK}/lint_planted.spvasm)
execute_process(COMMAND ${GLSLANG} -V --target-env vulkan1.2 -I${INCLUDE} -o ${spv} ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "glslangValidator failed on ${SOURCE}")
endif()
execute_process(COMMAND ${SPIRV_DIS} --raw-id -o ${dis} ${spv} RESULT_VARIABLE rc)
execute_process(COMMAND ${CMAKE_COMMAND} -DXHAL_SHADER_STEP=lint -DINPUT=${dis}
                        -DOUTPUT=${WORK}/lint_planted.lint -DSHADER=${SOURCE} -P ${SHADERS}
                RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "the lint accepted a shader with an unprecise multiply and a native sqrt")
endif()
string(REPLACE "\n" " " err "${err}")
message("refused as expected: ${err}")
