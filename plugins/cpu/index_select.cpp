// Gather: out[i, :] = src[idx[i], :], rows moved as bytes (any dtype).
#include <cstring>

#include "dense_ops.h"
#include "index_plan.h"
#include "isa_kernels.h"
#include "op_registry.h"

namespace xhal::cpu {
namespace {

// Fixed-size memcpy compiles to one move (and tolerates any alignment).
template <size_t kBytes>
void gather_words(const IndexPlan& plan, const std::byte* src, std::byte* out) {
  const int64_t count = static_cast<int64_t>(plan.count);
#pragma omp parallel for schedule(static) if (count > 65536)
  for (int64_t i = 0; i < count; ++i)
    std::memcpy(out + i * kBytes, src + plan.indices[i] * kBytes, kBytes);
}

}  // namespace

xhal_status_t index_select(void* device, void* plan_handle, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out) {
  count_launch(device);
  const auto& plan = *static_cast<const IndexPlan*>(plan_handle);
  const uint64_t row_bytes = static_cast<uint64_t>(row_elements(src)) * dtype_size(src->dtype);
  const std::byte* s = tensor_data<const std::byte>(src);
  std::byte* o = tensor_data<std::byte>(out);
  if (plan.count == 0 || row_bytes == 0) return XHAL_OK;
  // One-word rows: a typed loop instead of a memcpy call per element.
  switch (row_bytes) {
    case 1:
      gather_words<1>(plan, s, o);
      return XHAL_OK;
    case 2:
      gather_words<2>(plan, s, o);
      return XHAL_OK;
    case 4:
      gather_words<4>(plan, s, o);
      return XHAL_OK;
    case 8:
      gather_words<8>(plan, s, o);
      return XHAL_OK;
    default:
      break;
  }
  const int64_t count = static_cast<int64_t>(plan.count);
  const IsaKernels& k = isa();
  const bool stream = count * row_bytes >= kStreamBytes;
  // Rows are fetched a few ahead: their addresses are random, so the
  // hardware prefetcher cannot guess them.
  constexpr int64_t kAhead = 4;
#pragma omp parallel if (count * row_bytes > (1 << 18))
  {
#pragma omp for schedule(dynamic, 1024)
    for (int64_t i = 0; i < count; ++i) {
      if (i + kAhead < count) {
        const std::byte* next = s + plan.indices[i + kAhead] * row_bytes;
        for (uint64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(next + b);
      }
      k.copy_row(o + i * row_bytes, s + plan.indices[i] * row_bytes, row_bytes, stream);
    }
    if (stream) k.stream_fence();
  }
  return XHAL_OK;
}

// The slots this file fills (op_registry.h).
XHAL_CPU_OP(XHAL_OP_INDEX_SELECT, kEveryDtype, api.index_select = index_select);

}  // namespace xhal::cpu
