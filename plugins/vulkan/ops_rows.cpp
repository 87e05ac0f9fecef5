// Softmax, RMSNorm and LayerNorm, forward and backward (docs/semantics.md
// 3.2-3.6): one workgroup per row, of 32 invocations per chunk of 1024 with
// four canonical lanes each (rows=v2, shaders/rows2.glsl, the default) or of
// 128 per chunk with one lane each (rows=v1, shaders/rows.glsl); dgamma/dbeta
// in the two colsum stages of 3.5 through scratch memory. f16/bf16 tensors
// (docs/semantics.md 7.2) take the v2 kernels' narrow variants whatever the
// rows option: the same f32 orders, widened on load and narrowed on store.
// f64 tensors (7.3) take the v1 kernels compiled in binary64 (one width,
// CPG = 1), whatever the rows option.
#include <initializer_list>
#include <utility>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {

Device* dev(void* d) { return static_cast<Device*>(d); }

// The v2 kernels' blocks end with `vec` (1: vec4 loads and stores), the
// phase (0: a workgroup per row; 1.. : split rows) and the split rows'
// scratch; the v1 kernels' blocks are the same without them (the pushed
// size leaves them off).
struct SoftmaxPush {
  uint64_t a, b, out, rows, n;
  uint32_t vec, phase;
  uint64_t scratch;
};
constexpr uint32_t kSoftmaxPushV1 = 5 * sizeof(uint64_t);
struct NormPush {
  uint64_t x, gamma, beta, dy, out, mean, rstd, rows, n;
  float nf, eps;
  uint32_t vec, phase;
  uint64_t scratch;
  uint32_t params_narrow, pad;  // narrow x: gamma/beta in x's dtype (1) or f32 (0)
};
constexpr uint32_t kNormPushV1 = 9 * sizeof(uint64_t) + 2 * sizeof(float);
struct ColsumPush {
  uint64_t x, dy, mean, rstd, p, q, dgamma, dbeta, rows, n, blocks, p_out, q_out;
};
static_assert(fits_push<SoftmaxPush>() && fits_push<NormPush>() && fits_push<ColsumPush>());

// The variant of a row kernel for rows of n elements: CPG = the chunks of
// the row rounded up to a power of two, at most 8 (ids c1, c2, c4, c8 are
// consecutive).
ShaderId row_variant(ShaderId c1, uint64_t n) {
  const uint64_t chunks = (n + 1023) / 1024;
  uint32_t step = 0;
  while (step < 3 && (uint64_t{1} << step) < chunks) ++step;
  return static_cast<ShaderId>(c1 + step);
}

// rows=v2: CPG up to 16 (ids c1, c2, c4, c8, c16 consecutive).
ShaderId row_variant2(ShaderId c1, uint64_t n) {
  const uint64_t chunks = (n + 1023) / 1024;
  uint32_t step = 0;
  while (step < 4 && (uint64_t{1} << step) < chunks) ++step;
  return static_cast<ShaderId>(c1 + step);
}

bool is_narrow(xhal_dtype_t t) { return t == XHAL_DTYPE_F16 || t == XHAL_DTYPE_BF16; }

// A shader family's variant for a tensor's storage dtype (f32, f16, bf16,
// f64).
ShaderId by_dtype(xhal_dtype_t t, ShaderId f32, ShaderId f16, ShaderId bf16, ShaderId f64) {
  return t == XHAL_DTYPE_F16 ? f16 : t == XHAL_DTYPE_BF16 ? bf16 : t == XHAL_DTYPE_F64 ? f64 : f32;
}

// The row kernels of one op: v1 (c1 of four widths), v2 f32, f16 and bf16
// (each c1 of five widths), and the one f64 kernel.
struct RowIds {
  ShaderId v1, f32, f16, bf16, f64;
};

// The row kernel for rows of n elements of dtype t.
ShaderId row_kernel(const Device* d, RowIds ids, xhal_dtype_t t, uint64_t n) {
  if (t == XHAL_DTYPE_F64) return ids.f64;
  if (d->options.rows != 1 || is_narrow(t))
    return row_variant2(by_dtype(t, ids.f32, ids.f16, ids.bf16, ids.f32), n);
  return row_variant(ids.v1, n);
}

// Whether the kernel takes the v2 push block (the v1 and f64 kernels take
// its shorter prefix).
bool second_push(const Device* d, xhal_dtype_t t) {
  return t != XHAL_DTYPE_F64 && (d->options.rows != 1 || is_narrow(t));
}

// rows=v2 splits rows of more than one group (CPG = 16 chunks) over one
// workgroup per (row, group): the groups of a row in that many dispatches
// (phases), partials in scratch (2 floats per item).
uint64_t split_groups(const Device* d, xhal_dtype_t t, uint64_t n) {
  const uint64_t groups = (n + 16383) / 16384;
  return d->options.rows == 2 && t != XHAL_DTYPE_F64 && groups > 1 ? groups : 0;
}

// Records a row kernel: one dispatch of a workgroup per row, or `phases`
// dispatches of one per (row, group) with barriers between.
template <typename Push>
void record_rows(Device* d, VkPipeline p, Push push, uint32_t bytes, uint64_t groups,
                 uint32_t phases) {
  if (!groups) {
    d->dispatch(p, &push, bytes, d->groups_for(push.rows, 1));
    return;
  }
  for (uint32_t phase = 1; phase <= phases; ++phase) {
    if (phase > 1) d->barrier();
    push.phase = phase;
    d->dispatch(p, &push, bytes, d->groups_for(push.rows * groups, 1));
  }
}

uint64_t align256(uint64_t b) { return (b + 255) / 256 * 256; }

// The v2 kernels move four elements at once (a vec4 of f32, a uvec2 of
// f16/bf16) when every row starts aligned to that size: n % 4 == 0 and each
// address (a tensor's buffer address plus its byte offset) a multiple of
// four elements of its dtype. Unused tensors are address 0.
uint32_t vec_ok(uint64_t n, std::initializer_list<std::pair<uint64_t, xhal_dtype_t>> addrs) {
  if (n % 4 != 0) return 0;
  for (auto [a, t] : addrs)
    if (a % (is_narrow(t) ? 8 : 16) != 0) return 0;
  return 1;
}

uint64_t rows_of(const xhal_plugin_tensor_t* x) { return static_cast<uint64_t>(x->shape[0]); }
uint64_t cols_of(const xhal_plugin_tensor_t* x) { return static_cast<uint64_t>(x->shape[1]); }
uint64_t addr(const xhal_plugin_tensor_t* t) { return t ? address_of(t) : 0; }

xhal_status_t softmax(Device* d, RowIds ids, const xhal_plugin_tensor_t* a,
                      const xhal_plugin_tensor_t* b, const xhal_plugin_tensor_t* out) {
  std::lock_guard lock(d->mutex);
  const xhal_dtype_t t = a->dtype;
  const bool second = second_push(d, t);
  VkPipeline p[1];
  XHAL_VK_TRY(pipelines(d, {row_kernel(d, ids, t, cols_of(a))}, p));
  SoftmaxPush push{address_of(a), addr(b), address_of(out), rows_of(a), cols_of(a), 0, 0, 0};
  if (push.rows == 0 || push.n == 0) return XHAL_OK;
  push.vec = vec_ok(push.n, {{push.a, t}, {push.b, t}, {push.out, t}});
  const uint64_t groups = split_groups(d, t, push.n);
  if (groups) XHAL_VK_TRY(d->need_scratch(push.rows * groups * 2 * sizeof(float)));
  push.scratch = groups ? d->scratch.address : 0;
  XHAL_VK_TRY(d->begin());
  record_rows(d, p[0], push, second ? uint32_t{sizeof push} : kSoftmaxPushV1, groups, 2);
  return d->submit();
}

// The row kernel of a norm; for the backward ops first colsum stage 1 (it
// reads dy, which dx may overwrite in place), then the rows, then stage 2.
// xt: x's dtype (also y, dy, dx); gt: gamma's (also beta, dgamma, dbeta).
xhal_status_t norm(Device* d, RowIds ids, bool layer, bool backward, NormPush push, xhal_dtype_t xt,
                   xhal_dtype_t gt, const xhal_plugin_tensor_t* dgamma,
                   const xhal_plugin_tensor_t* dbeta) {
  std::lock_guard lock(d->mutex);
  const bool second = second_push(d, xt);
  using namespace xhal_spirv;
  const ShaderId col1 =
      layer ? by_dtype(xt, colsum1_ln, colsum1_ln_f16, colsum1_ln_bf16, colsum1_ln_f64)
            : by_dtype(xt, colsum1_rms, colsum1_rms_f16, colsum1_rms_bf16, colsum1_rms_f64);
  const ShaderId col2 =
      layer ? by_dtype(gt, colsum2_ln, colsum2_ln_f16, colsum2_ln_bf16, colsum2_ln_f64)
            : by_dtype(gt, colsum2_rms, colsum2_rms_f16, colsum2_rms_bf16, colsum2_rms_f64);
  // colsum's partials are binary64 for f64 x, else f32.
  const uint64_t part = xt == XHAL_DTYPE_F64 ? 8 : 4;
  VkPipeline p[3];
  XHAL_VK_TRY(pipelines(d, {row_kernel(d, ids, xt, push.n), col1, col2}, p));
  push.nf = static_cast<float>(push.n);
  push.params_narrow = is_narrow(gt) ? 1 : 0;
  // (mean and rstd are read and written as scalars; the unused addresses are 0.)
  push.vec = vec_ok(
      push.n, {{push.x, xt}, {push.gamma, gt}, {push.beta, gt}, {push.dy, xt}, {push.out, xt}});
  const uint32_t push_bytes = second ? uint32_t{sizeof push} : kNormPushV1;
  // LayerNorm forward stays one workgroup per row: its split needs three
  // dispatches, and on the H200 it was 2.3x slower than the unsplit kernel
  // at 64 x 262144 (0.388 against 0.169 ms, 2026-12-02; the other row ops'
  // splits were as fast or faster).
  const uint64_t groups = layer && !backward ? 0 : split_groups(d, xt, push.n);
  const uint32_t phases = 2;
  uint64_t col_bytes = 0;  // colsum's scratch first, then the split rows'
  ColsumPush col{};
  if (backward) {
    col.x = push.x;
    col.dy = push.dy;
    col.mean = push.mean;
    col.rstd = push.rstd;
    col.rows = push.rows;
    col.n = push.n;
    col.blocks = (push.rows + 31) / 32;
    col.dgamma = address_of(dgamma);
    col.dbeta = addr(dbeta);
    // Scratch: stage 1's partials and, per stage-2 pass, the next level
    // (64 times fewer), for p and (LN) q, each 256-byte aligned.
    auto align = [](uint64_t b) { return (b + 255) / 256 * 256; };
    for (uint64_t count = col.blocks;; count = (count + 63) / 64) {
      col_bytes += align(count * col.n * part) * (layer ? 2 : 1);
      if (count <= 1) break;
    }
  }
  const uint64_t row_bytes = groups ? align256(push.rows * groups * 2 * sizeof(float)) : 0;
  if (col_bytes + row_bytes) XHAL_VK_TRY(d->need_scratch(col_bytes + row_bytes));
  push.scratch = groups ? d->scratch.address + col_bytes : 0;
  XHAL_VK_TRY(d->begin());
  if (backward) {
    // Stage 2 passes: blocks -> ceil(blocks / 64) -> ... -> 1 (the last pass
    // writes dgamma/dbeta).
    auto align = [](uint64_t b) { return (b + 255) / 256 * 256; };
    uint64_t at = d->scratch.address;
    uint64_t count = col.blocks;
    col.p = at;
    at += align(count * col.n * part);
    if (layer) {
      col.q = at;
      at += align(count * col.n * part);
    }
    ColsumPush stage1 = col;
    d->dispatch(p[1], &stage1, sizeof stage1, d->groups_for(col.blocks * col.n, 256));
    d->barrier();
    record_rows(d, p[0], push, push_bytes, groups, phases);
    for (;;) {
      const uint64_t next = (count + 63) / 64;
      ColsumPush pass = col;
      pass.blocks = count;
      pass.p_out = at;
      at += align(next * col.n * part);
      if (layer) {
        pass.q_out = at;
        at += align(next * col.n * part);
      }
      d->dispatch(p[2], &pass, sizeof pass, d->groups_for(next * col.n, 256));
      if (next == 1) break;
      d->barrier();
      col.p = pass.p_out;
      col.q = pass.q_out;
      count = next;
    }
    return d->submit();
  }
  record_rows(d, p[0], push, push_bytes, groups, phases);
  return d->submit();
}

}  // namespace

xhal_status_t softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                              const xhal_plugin_tensor_t* y) {
  using namespace xhal_spirv;
  return softmax(
      dev(device),
      {softmax_fwd_c1, softmax2_fwd_c1, softmax2_fwd_f16_c1, softmax2_fwd_bf16_c1, softmax_fwd_f64},
      x, nullptr, y);
}

xhal_status_t softmax_backward(void* device, const xhal_plugin_tensor_t* y,
                               const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx) {
  using namespace xhal_spirv;
  return softmax(
      dev(device),
      {softmax_bwd_c1, softmax2_bwd_c1, softmax2_bwd_f16_c1, softmax2_bwd_bf16_c1, softmax_bwd_f64},
      y, dy, dx);
}

xhal_status_t rms_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                               const xhal_plugin_tensor_t* gamma, float eps,
                               const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* rstd) {
  NormPush push{};
  push.x = address_of(x);
  push.gamma = address_of(gamma);
  push.out = address_of(y);
  push.rstd = address_of(rstd);
  push.rows = rows_of(x);
  push.n = cols_of(x);
  push.eps = eps;
  using namespace xhal_spirv;
  return norm(dev(device),
              {rms_fwd_c1, rms2_fwd_c1, rms2_fwd_f16_c1, rms2_fwd_bf16_c1, rms_fwd_f64}, false,
              false, push, x->dtype, gamma->dtype, nullptr, nullptr);
}

xhal_status_t rms_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                const xhal_plugin_tensor_t* gamma, const xhal_plugin_tensor_t* rstd,
                                const xhal_plugin_tensor_t* dy, const xhal_plugin_tensor_t* dx,
                                const xhal_plugin_tensor_t* dgamma) {
  NormPush push{};
  push.x = address_of(x);
  push.gamma = address_of(gamma);
  push.rstd = address_of(rstd);
  push.dy = address_of(dy);
  push.out = address_of(dx);
  push.rows = rows_of(x);
  push.n = cols_of(x);
  using namespace xhal_spirv;
  return norm(dev(device),
              {rms_bwd_c1, rms2_bwd_c1, rms2_bwd_f16_c1, rms2_bwd_bf16_c1, rms_bwd_f64}, false,
              true, push, x->dtype, gamma->dtype, dgamma, nullptr);
}

xhal_status_t layer_norm_forward(void* device, const xhal_plugin_tensor_t* x,
                                 const xhal_plugin_tensor_t* gamma,
                                 const xhal_plugin_tensor_t* beta, float eps,
                                 const xhal_plugin_tensor_t* y, const xhal_plugin_tensor_t* mean,
                                 const xhal_plugin_tensor_t* rstd) {
  NormPush push{};
  push.x = address_of(x);
  push.gamma = address_of(gamma);
  push.beta = address_of(beta);
  push.out = address_of(y);
  push.mean = address_of(mean);
  push.rstd = address_of(rstd);
  push.rows = rows_of(x);
  push.n = cols_of(x);
  push.eps = eps;
  using namespace xhal_spirv;
  return norm(dev(device), {ln_fwd_c1, ln2_fwd_c1, ln2_fwd_f16_c1, ln2_fwd_bf16_c1, ln_fwd_f64},
              true, false, push, x->dtype, gamma->dtype, nullptr, nullptr);
}

xhal_status_t layer_norm_backward(void* device, const xhal_plugin_tensor_t* x,
                                  const xhal_plugin_tensor_t* gamma,
                                  const xhal_plugin_tensor_t* mean,
                                  const xhal_plugin_tensor_t* rstd, const xhal_plugin_tensor_t* dy,
                                  const xhal_plugin_tensor_t* dx,
                                  const xhal_plugin_tensor_t* dgamma,
                                  const xhal_plugin_tensor_t* dbeta) {
  NormPush push{};
  push.x = address_of(x);
  push.gamma = address_of(gamma);
  push.mean = address_of(mean);
  push.rstd = address_of(rstd);
  push.dy = address_of(dy);
  push.out = address_of(dx);
  push.rows = rows_of(x);
  push.n = cols_of(x);
  using namespace xhal_spirv;
  return norm(dev(device), {ln_bwd_c1, ln2_bwd_c1, ln2_bwd_f16_c1, ln2_bwd_bf16_c1, ln_bwd_f64},
              true, true, push, x->dtype, gamma->dtype, dgamma, dbeta);
}

}  // namespace xhal::vk
