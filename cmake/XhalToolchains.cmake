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

set(XHAL_VULKAN_FOUND OFF)
find_package(Vulkan QUIET)
find_program(XHAL_GLSLANG glslangValidator)
if(Vulkan_FOUND AND XHAL_GLSLANG AND EXISTS ${CMAKE_SOURCE_DIR}/plugins/vulkan/CMakeLists.txt)
  set(XHAL_VULKAN_FOUND ON)
endif()
