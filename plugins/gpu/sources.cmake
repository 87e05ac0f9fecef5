# The one kernel source shared by plugins/cuda and plugins/rocm.
set(XHAL_GPU_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(XHAL_GPU_SOURCES
  ${XHAL_GPU_SOURCE_DIR}/plugin.cpp
  ${XHAL_GPU_SOURCE_DIR}/gpu_helpers.cpp
  ${XHAL_GPU_SOURCE_DIR}/ops_gather.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_schedule.cpp
  ${XHAL_GPU_SOURCE_DIR}/ops_rows.cpp
  ${XHAL_GPU_SOURCE_DIR}/ops_sparse.cpp
  ${XHAL_GPU_SOURCE_DIR}/solve_syncfree.cpp)
file(GLOB XHAL_GPU_HEADERS ${XHAL_GPU_SOURCE_DIR}/*.h)
