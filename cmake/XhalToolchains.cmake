# Detects which GPU toolchains are present, to default each plugin ON only
# when it can be built. Every XHAL_ENABLE_* option can still be overridden.
include(CheckLanguage)

set(XHAL_CUDA_FOUND OFF)
if(NOT DEFINED CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "")
endif()
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  set(XHAL_CUDA_FOUND ON)
endif()

set(XHAL_ROCM_FOUND OFF)
find_program(XHAL_HIPCC hipcc)
if(XHAL_HIPCC)
  set(XHAL_ROCM_FOUND ON)
endif()

# Vulkan: the plugin needs the Vulkan headers, volk (its source is compiled
# into the plugin, which opens libvulkan.so.1 at run time, so nothing links
# the loader), glslangValidator to compile the shaders and spirv-val /
# spirv-dis to check them (cmake/XhalShaders.cmake).
set(XHAL_VULKAN_FOUND OFF)
find_path(XHAL_VULKAN_INCLUDE_DIR vulkan/vulkan.h)
find_path(XHAL_VOLK_INCLUDE_DIR volk.h)
find_file(XHAL_VOLK_SOURCE volk.c HINTS ${XHAL_VOLK_INCLUDE_DIR})
find_program(XHAL_GLSLANG glslangValidator)
find_program(XHAL_SPIRV_VAL spirv-val)
find_program(XHAL_SPIRV_DIS spirv-dis)
find_program(XHAL_SPIRV_OPT_EXE spirv-opt)
if(XHAL_VULKAN_INCLUDE_DIR AND XHAL_VOLK_SOURCE AND XHAL_GLSLANG AND XHAL_SPIRV_VAL
   AND XHAL_SPIRV_DIS AND EXISTS ${CMAKE_SOURCE_DIR}/plugins/vulkan/CMakeLists.txt)
  set(XHAL_VULKAN_FOUND ON)
endif()
