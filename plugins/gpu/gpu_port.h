// The one place where CUDA and HIP differ. Kernel sources include only this
// header and write gpu* / xhal_* names; plugins/cuda builds them with nvcc,
// plugins/rocm with hipcc. Nothing else in plugins/gpu names a vendor.
#pragma once

#if defined(__HIPCC__) || defined(XHAL_GPU_HIP)
#ifndef XHAL_GPU_HIP
#define XHAL_GPU_HIP 1
#endif
#include <hip/hip_runtime.h>

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuDeviceProp_t = hipDeviceProp_t;
#define gpuSuccess hipSuccess
#define gpuErrorMemoryAllocation hipErrorOutOfMemory
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuSetDevice hipSetDevice
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuMallocAsync hipMallocAsync
#define gpuFreeAsync hipFreeAsync
#define gpuDeviceGetAttribute hipDeviceGetAttribute
#define gpuDevAttrMemoryPoolsSupported hipDeviceAttributeMemoryPoolsSupported
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuEventCreate hipEventCreate
#define gpuEventDestroy hipEventDestroy
#define gpuEventRecord hipEventRecord
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuStreamWaitEvent hipStreamWaitEvent
using gpuPointerAttributes_t = hipPointerAttribute_t;
#define gpuPointerGetAttributes hipPointerGetAttributes
// Device memory of the runtime (plain or managed) by its pointer attributes.
inline bool xhal_is_device_memory(const gpuPointerAttributes_t& a) {
  return a.memoryType == hipMemoryTypeDevice || a.isManaged;
}
#define XHAL_GPU_BACKEND_NAME "rocm"
#define XHAL_GPU_RUNTIME_NAME "HIP"

// Logical warps are 32 lanes on every target: the width argument keeps a
// 64-wide wavefront working as two independent 32-lane halves.
__device__ __forceinline__ float xhal_shfl_down(float v, int d) { return __shfl_down(v, d, 32); }
__device__ __forceinline__ float xhal_shfl(float v, int src) { return __shfl(v, src, 32); }
__device__ __forceinline__ double xhal_shfl_down(double v, int d) { return __shfl_down(v, d, 32); }
__device__ __forceinline__ double xhal_shfl(double v, int src) { return __shfl(v, src, 32); }
__device__ __forceinline__ int xhal_shfl(int v, int src) { return __shfl(v, src, 32); }
__device__ __forceinline__ void xhal_warp_sync() {}

#else  // CUDA
#include <cuda_runtime.h>

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuDeviceProp_t = cudaDeviceProp;
#define gpuSuccess cudaSuccess
#define gpuErrorMemoryAllocation cudaErrorMemoryAllocation
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuSetDevice cudaSetDevice
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuMallocAsync cudaMallocAsync
#define gpuFreeAsync cudaFreeAsync
#define gpuDeviceGetAttribute cudaDeviceGetAttribute
#define gpuDevAttrMemoryPoolsSupported cudaDevAttrMemoryPoolsSupported
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuEventCreate cudaEventCreate
#define gpuEventDestroy cudaEventDestroy
#define gpuEventRecord cudaEventRecord
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuStreamWaitEvent cudaStreamWaitEvent
using gpuPointerAttributes_t = cudaPointerAttributes;
#define gpuPointerGetAttributes cudaPointerGetAttributes
// Device memory of the runtime (plain or managed) by its pointer attributes.
inline bool xhal_is_device_memory(const gpuPointerAttributes_t& a) {
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}
#define XHAL_GPU_BACKEND_NAME "cuda"
#define XHAL_GPU_RUNTIME_NAME "CUDA"

__device__ __forceinline__ float xhal_shfl_down(float v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d, 32);
}
__device__ __forceinline__ float xhal_shfl(float v, int src) {
  return __shfl_sync(0xffffffffu, v, src, 32);
}
__device__ __forceinline__ double xhal_shfl_down(double v, int d) {
  return __shfl_down_sync(0xffffffffu, v, d, 32);
}
__device__ __forceinline__ double xhal_shfl(double v, int src) {
  return __shfl_sync(0xffffffffu, v, src, 32);
}
__device__ __forceinline__ int xhal_shfl(int v, int src) {
  return __shfl_sync(0xffffffffu, v, src, 32);
}
__device__ __forceinline__ void xhal_warp_sync() { __syncwarp(); }
#endif

// Correctly rounded float32 operations, never contracted (docs/semantics.md
// section 1). HIP provides the same __f*_rn intrinsics.
__device__ __forceinline__ float xadd(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float xsub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float xmul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float xdiv(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float xsqrt(float a) { return __fsqrt_rn(a); }
// The same in binary64 (7.3); overloads, so a kernel templated over its
// compute type writes xadd(a, b) for both, and mixing the two is an error.
__device__ __forceinline__ double xadd(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double xsub(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ double xmul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double xdiv(double a, double b) { return __ddiv_rn(a, b); }
__device__ __forceinline__ double xsqrt(double a) { return __dsqrt_rn(a); }
