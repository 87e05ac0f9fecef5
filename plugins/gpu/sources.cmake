# The one kernel source shared by plugins/cuda and plugins/rocm, one file per
# op family (as in plugins/cpu); device_options.cpp and index_schedule.cpp
# are plain C++, also compiled into host-only tests.
set(XHAL_GPU_SOURCE_DIR ${CMAKE_CURRENT_LIST_DIR})
set(XHAL_GPU_SOURCES
  ${XHAL_GPU_SOURCE_DIR}/plugin.cpp
  ${XHAL_GPU_SOURCE_DIR}/device_options.cpp
  ${XHAL_GPU_SOURCE_DIR}/gpu_helpers.cpp
  ${XHAL_GPU_SOURCE_DIR}/buffers.cpp
  ${XHAL_GPU_SOURCE_DIR}/interop.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_plan.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_plan_device.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_schedule.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_select.cpp
  ${XHAL_GPU_SOURCE_DIR}/index_add.cpp
  ${XHAL_GPU_SOURCE_DIR}/permute.cpp
  ${XHAL_GPU_SOURCE_DIR}/softmax.cpp
  ${XHAL_GPU_SOURCE_DIR}/rms_norm.cpp
  ${XHAL_GPU_SOURCE_DIR}/layer_norm.cpp
  ${XHAL_GPU_SOURCE_DIR}/colsum.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_matrix.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_transpose.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_from_buffers.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_spmv.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_solve.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_solve_levels.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_solve_syncfree.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_solve_syncfree_schedule.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_solve_backward.cpp
  ${XHAL_GPU_SOURCE_DIR}/sparse_spgemm.cpp)
file(GLOB XHAL_GPU_HEADERS ${XHAL_GPU_SOURCE_DIR}/*.h)
