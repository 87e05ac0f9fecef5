// permute: validation, then the smallest equivalent problem. The permutation
// is folded into src's strides (dst order), size-1 dims are dropped and dims
// that stay adjacent in memory are merged. One contiguous run left means a
// plain copy (no kernel); otherwise the plugin gathers with the reduced
// strides, decoding each output index over the OUTPUT shape.
#include <array>
#include "internal.h"

#include "op_validate.h"
#include "validate.h"

namespace xhal {

PermutePlan plan_permute(uint32_t rank, const int64_t* dst_shape, const int64_t* src_strides,
                         const uint32_t* perm) {
  PermutePlan p;
  // Dims in dst order, with src's stride of the dim that lands there.
  for (uint32_t i = 0; i < rank; ++i) {
    if (dst_shape[i] == 1) continue;  // a size-1 dim moves nothing
    p.shape[p.rank] = dst_shape[i];
    p.src_strides[p.rank] = src_strides[perm[i]];
    ++p.rank;
  }
  // Merge dim k into k+1 when stepping k is the same as running through k+1.
  uint32_t m = 0;
  for (uint32_t k = 0; k < p.rank; ++k) {
    if (m > 0 && p.src_strides[m - 1] == p.src_strides[k] * p.shape[k]) {
      p.shape[m - 1] *= p.shape[k];
      p.src_strides[m - 1] = p.src_strides[k];
    } else {
      p.shape[m] = p.shape[k];
      p.src_strides[m] = p.src_strides[k];
      ++m;
    }
  }
  p.rank = m;
  p.is_copy = p.rank == 0 || (p.rank == 1 && p.src_strides[0] == 1);
  return p;
}

}  // namespace xhal

using namespace xhal;

static xhal_status_t permute(xhal_device_t device_handle, const xhal_tensor_t* src,
                             const uint32_t* perm, const xhal_tensor_t* dst) {
  Device* device = nullptr;
  XHAL_TRY(get_device(device_handle, "device", &device));
  std::lock_guard queue(device->queue);
  OpContext ctx;
  ctx.perm = perm;
  OpArgs a;
  XHAL_TRY(validate_op<XHAL_OP_PERMUTE>(device, std::array{src, dst}.data(), ctx, &a));
  const Checked &cs = a.arg[0], &cd = a.arg[1];
  if (cd.elements == 0) return XHAL_OK;

  const PermutePlan p = plan_permute(cs.rank(), cd.shape(), cs.plugin.strides, perm);
  if (p.is_copy)
    return XHAL_PLUGIN_CALL(device, buffer_copy, cs.plugin.buffer, cs.plugin.offset,
                            cd.plugin.buffer, cd.plugin.offset,
                            static_cast<uint64_t>(cd.elements) * cd.elem_size);
  xhal_plugin_tensor_t ps = cs.plugin, pd = cd.plugin;
  ps.rank = pd.rank = p.rank;
  for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) {
    ps.shape[k] = pd.shape[k] = k < p.rank ? p.shape[k] : 0;
    ps.strides[k] = k < p.rank ? p.src_strides[k] : 0;
  }
  row_major_strides(pd.rank, pd.shape, pd.strides);
  for (uint32_t k = pd.rank; k < XHAL_MAX_RANK; ++k) pd.strides[k] = 0;
  return XHAL_PLUGIN_CALL(device, permute, &ps, &pd);
}

extern "C" xhal_status_t xhal_permute(xhal_device_t device, const xhal_tensor_t* src,
                                      const uint32_t* perm, const xhal_tensor_t* dst) {
  return entry("xhal_permute", [&] { return permute(device, src, perm, dst); });
}
