// CSR matrices: the pattern and its transpose, the spmv row lists and the
// level schedules of the triangular solves are built on the host from the
// validated arrays of csr_create and uploaded once (one staging transfer);
// values stay in the core's values buffer and are read at op time: f32, or
// f16/bf16 (spmv and spmm only: the _f16/_bf16 shader variants).
#include <algorithm>
#include <cstdint>
#include <new>
#include <vector>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {

constexpr int64_t kShortRow = 32;  // spmv: rows up to this many entries take one invocation
constexpr int64_t kChunk = 32;     // solve: a row of more off-diagonal entries is long

// Rows of one pattern (A or A^T) walked in one direction, sorted by level;
// within a level the short rows (at most one chunk of off-diagonal
// entries) first, then the long ones (solve.comp).
struct Walk {
  bool built = false;
  uint64_t order_at = 0, level_ptr_at = 0, long_ptr_at = 0, long_first_at = 0, chunks_at = 0,
           recs_at = 0;
  uint64_t chunks = 0;  // chunks of the long rows, all levels
  // Host copies, per level: the runs and dispatches are planned per call.
  std::vector<int64_t> step1;        // short rows + chunks of long rows
  std::vector<int64_t> longs;        // long rows
  std::vector<int64_t> most_chunks;  // most chunks of one long row
};

struct Pattern {
  int64_t rows = 0;
  uint64_t row_ptr_at = 0, col_at = 0;
  uint64_t perm_at = 0;  // A^T only
  uint64_t short_at = 0, short_count = 0, long_at = 0, long_count = 0;
  Walk walk[2];  // [0] descending, [1] ascending
};

struct Matrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  Mem mem;
  Buffer* values = nullptr;  // owned by the core
  xhal_dtype_t values_dtype = XHAL_DTYPE_F32;
  uint64_t row_idx_at = 0;
  Pattern a, at;
  // 4: the upload holds int32 (every value fits; the _i32 shaders read it),
  // 8: int64.
  uint64_t index_bytes = 8;
  uint64_t addr(uint64_t at_elem) const { return mem.address + at_elem * index_bytes; }
  uint64_t values_addr() const { return values ? values->mem.address : 0; }
  bool narrow() const { return index_bytes == 4; }
};

Device* dev(void* d) { return static_cast<Device*>(d); }

// Appends `v` to the upload and returns its offset (elements).
uint64_t put(std::vector<int64_t>& all, const int64_t* v, uint64_t n) {
  const uint64_t at = all.size();
  if (n) all.insert(all.end(), v, v + n);
  return at;
}

void build_lists(std::vector<int64_t>& all, Pattern& p, const int64_t* row_ptr) {
  std::vector<int64_t> shorts, longs;
  for (int64_t r = 0; r < p.rows; ++r)
    (row_ptr[r + 1] - row_ptr[r] <= kShortRow ? shorts : longs).push_back(r);
  p.short_count = shorts.size();
  p.long_count = longs.size();
  p.short_at = put(all, shorts.data(), shorts.size());
  p.long_at = put(all, longs.data(), longs.size());
}

// Level sets of the solve walking `p` ascending (lower: a row depends on
// lower-numbered rows) or descending; only when the whole pattern lies in
// that triangle (other solves are refused).
void build_walk(std::vector<int64_t>& all, Pattern& p, const int64_t* row_ptr, const int64_t* col,
                const int64_t* perm, bool ascending) {
  const int64_t n = p.rows;
  for (int64_t r = 0; r < n; ++r)
    for (int64_t e = row_ptr[r]; e < row_ptr[r + 1]; ++e)
      if (ascending ? col[e] > r : col[e] < r) return;
  std::vector<int64_t> level(static_cast<size_t>(n), 0), off_diag(static_cast<size_t>(n), 0);
  int64_t levels = n ? 1 : 0;
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t k = ascending ? pos : n - 1 - pos;
    int64_t l = 0;
    for (int64_t e = row_ptr[k]; e < row_ptr[k + 1]; ++e)
      if (col[e] != k) l = std::max(l, level[col[e]] + 1);
    level[k] = l;
    levels = std::max(levels, l + 1);
    // Off-diagonal entries as solve.comp counts them: the stored diagonal
    // is found by position (last walking ascending, first descending).
    const int64_t rb = row_ptr[k], re = row_ptr[k + 1];
    const bool diag = re > rb && col[ascending ? re - 1 : rb] == k;
    off_diag[k] = re - rb - (diag ? 1 : 0);
  }
  Walk& w = p.walk[ascending ? 1 : 0];
  std::vector<int64_t> level_ptr(static_cast<size_t>(levels) + 1, 0),
      long_ptr(static_cast<size_t>(levels) + 1, 0);
  for (int64_t k = 0; k < n; ++k) {
    ++level_ptr[level[k] + 1];
    if (off_diag[k] > kChunk) ++long_ptr[level[k] + 1];
  }
  for (int64_t l = 0; l < levels; ++l) {
    level_ptr[l + 1] += level_ptr[l];
    long_ptr[l + 1] += long_ptr[l];
  }
  // Short rows of each level first, then its long rows, each in row order.
  std::vector<int64_t> order(static_cast<size_t>(n)), next_short(static_cast<size_t>(levels)),
      next_long(static_cast<size_t>(levels));
  for (int64_t l = 0; l < levels; ++l) {
    next_short[l] = level_ptr[l];
    next_long[l] = level_ptr[l + 1] - (long_ptr[l + 1] - long_ptr[l]);
  }
  for (int64_t k = 0; k < n; ++k)
    order[(off_diag[k] > kChunk ? next_long : next_short)[level[k]]++] = k;
  // Long rows in order: their first chunks, and each chunk's {position, index}.
  std::vector<int64_t> long_first{0}, chunks;
  w.step1.assign(static_cast<size_t>(levels), 0);
  w.longs.assign(static_cast<size_t>(levels), 0);
  w.most_chunks.assign(static_cast<size_t>(levels), 0);
  for (int64_t l = 0; l < levels; ++l) {
    int64_t level_chunks = 0;
    for (int64_t pos = level_ptr[l + 1] - (long_ptr[l + 1] - long_ptr[l]); pos < level_ptr[l + 1];
         ++pos) {
      const int64_t c = (off_diag[order[pos]] + kChunk - 1) / kChunk;
      for (int64_t i = 0; i < c; ++i) {
        chunks.push_back(pos);
        chunks.push_back(i);
      }
      long_first.push_back(long_first.back() + c);
      level_chunks += c;
      w.most_chunks[l] = std::max(w.most_chunks[l], c);
    }
    w.longs[l] = long_ptr[l + 1] - long_ptr[l];
    w.step1[l] = (level_ptr[l + 1] - level_ptr[l] - w.longs[l]) + level_chunks;
  }
  // Per position: {row, first and end of its off-diagonal entries, index
  // of its diagonal's value (through t_perm for A^T) or -1}, so that the
  // runs can load a row's x-independent inputs levels ahead.
  std::vector<int64_t> recs(4 * static_cast<size_t>(n));
  for (int64_t pos = 0; pos < n; ++pos) {
    const int64_t k = order[pos];
    int64_t rb = row_ptr[k], re = row_ptr[k + 1], diag = -1;
    if (re > rb && col[ascending ? re - 1 : rb] == k) diag = ascending ? --re : rb++;
    recs[4 * pos] = k;
    recs[4 * pos + 1] = rb;
    recs[4 * pos + 2] = re;
    recs[4 * pos + 3] = diag < 0 ? -1 : perm ? perm[diag] : diag;
  }
  w.chunks = static_cast<uint64_t>(long_first.back());
  w.order_at = put(all, order.data(), order.size());
  w.level_ptr_at = put(all, level_ptr.data(), level_ptr.size());
  w.long_ptr_at = put(all, long_ptr.data(), long_ptr.size());
  w.long_first_at = put(all, long_first.data(), long_first.size());
  w.chunks_at = put(all, chunks.data(), chunks.size());
  w.recs_at = put(all, recs.data(), recs.size());
  w.built = true;
}

struct SpmvPush {
  uint64_t row_ptr, col, perm, values, x, y, list, count, k;
  float alpha, beta;
  uint32_t beta_zero;
};
struct SolvePush {
  uint64_t row_ptr, col, perm, values, b, x, order, level_ptr, long_ptr, long_first, chunks,
      partial, recs, begin, end;
  uint32_t k, flags;  // flags: 1 unit diagonal, 2 ascending, 4 step 2 (solve.comp)
};
struct GradPush {
  uint64_t row_idx, col, x, gb, ga, nnz, k;
  uint32_t transposed, unit_diag;
};
struct SpgemmPush {
  uint64_t a_row_ptr, a_col, a_val, b_row_ptr, b_col, b_val, c_row, c_col, c_val, nnz;
  uint32_t narrow;  // bits 0, 1, 2: A's, B's, C's upload is int32
};
static_assert(fits_push<SpmvPush>() && fits_push<SolvePush>() && fits_push<GradPush>() &&
              fits_push<SpgemmPush>());

uint64_t columns(const xhal_plugin_tensor_t* t) {
  return t->rank >= 2 ? static_cast<uint64_t>(t->shape[1]) : 1;
}

// The matrix's value dtype: desc->values_dtype exists in the descs of 1.6
// cores and later (0 or absent: f32).
xhal_dtype_t desc_values_dtype(const xhal_plugin_csr_desc_t* desc) {
  if (core_abi_minor() < 6 || desc->values_dtype == 0) return XHAL_DTYPE_F32;
  return desc->values_dtype;
}

// The solves and spgemm take f32 or f64 matrices (the core refuses the
// others before the plugin, from the op dtype bits; this keeps a mistake
// loud).
xhal_status_t require_dtype(const Matrix& m, const char* op) {
  if (m.values_dtype == XHAL_DTYPE_F32 || m.values_dtype == XHAL_DTYPE_F64) return XHAL_OK;
  return fail(XHAL_UNSUPPORTED, "%s: a matrix of %s values is not implemented by the vulkan plugin",
              op,
              m.values_dtype == XHAL_DTYPE_F16    ? "f16"
              : m.values_dtype == XHAL_DTYPE_BF16 ? "bf16"
                                                  : "f64");
}

}  // namespace

xhal_status_t csr_create(void* device, const xhal_plugin_csr_desc_t* desc, void** out_matrix) {
  Device* d = dev(device);
  const xhal_dtype_t values_dtype = desc_values_dtype(desc);
  // f32, f16, bf16, and f64 where the device has it: the core passes no
  // other (it reads the op dtype bits).
  if (values_dtype != XHAL_DTYPE_F32 && values_dtype != XHAL_DTYPE_F16 &&
      values_dtype != XHAL_DTYPE_BF16 && !(values_dtype == XHAL_DTYPE_F64 && d->gpu->f64))
    return fail(XHAL_UNSUPPORTED,
                "csr_create: values_dtype %d is not implemented by the vulkan plugin on this "
                "device (f32, f16, bf16%s)",
                static_cast<int>(values_dtype), d->gpu->f64 ? ", f64" : "");
  std::lock_guard lock(d->mutex);
  auto* m = new (std::nothrow) Matrix;
  if (!m) return fail(XHAL_OUT_OF_MEMORY, "host allocation failed");
  try {
    m->rows = desc->rows;
    m->cols = desc->cols;
    m->nnz = desc->nnz;
    m->values = static_cast<Buffer*>(desc->values_buffer);
    m->values_dtype = values_dtype;
    const uint64_t nnz = static_cast<uint64_t>(desc->nnz);
    std::vector<int64_t> all;
    m->a.rows = desc->rows;
    m->at.rows = desc->cols;
    m->a.row_ptr_at = put(all, desc->row_ptr, desc->rows + 1);
    m->a.col_at = put(all, desc->col_idx, nnz);
    m->row_idx_at = put(all, desc->row_idx, nnz);
    m->at.row_ptr_at = put(all, desc->t_row_ptr, desc->cols + 1);
    m->at.col_at = put(all, desc->t_col_idx, nnz);
    m->at.perm_at = put(all, desc->t_perm, nnz);
    build_lists(all, m->a, desc->row_ptr);
    build_lists(all, m->at, desc->t_row_ptr);
    if (desc->rows == desc->cols) {
      for (bool asc : {false, true}) {
        build_walk(all, m->a, desc->row_ptr, desc->col_idx, nullptr, asc);
        build_walk(all, m->at, desc->t_row_ptr, desc->t_col_idx, desc->t_perm, asc);
      }
    }
    // int32 when every value fits: half the index bytes each op reads.
    std::vector<int32_t> all32;
    if (!d->options.sparse_index64 && std::all_of(all.begin(), all.end(), [](int64_t v) {
          return v >= INT32_MIN && v <= INT32_MAX;
        })) {
      all32.assign(all.begin(), all.end());
      std::vector<int64_t>().swap(all);
      m->index_bytes = 4;
    }
    const uint64_t bytes = m->narrow() ? all32.size() * 4 : all.size() * 8;
    const void* upload = m->narrow() ? static_cast<const void*>(all32.data()) : all.data();
    xhal_status_t s = mem_create(*d->gpu, bytes, false, &m->mem);
    if (s == XHAL_OK && bytes) s = d->upload(m->mem, 0, upload, bytes);
    if (s != XHAL_OK) {
      mem_destroy(*d->gpu, m->mem);
      delete m;
      return s;
    }
  } catch (const std::bad_alloc&) {
    mem_destroy(*d->gpu, m->mem);
    delete m;
    return fail(XHAL_OUT_OF_MEMORY, "host memory exhausted while analysing the pattern");
  }
  *out_matrix = m;
  return XHAL_OK;
}

void csr_destroy(void* device, void* matrix) {
  if (!matrix) return;
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  d->wait_idle();
  auto* m = static_cast<Matrix*>(matrix);
  mem_destroy(*d->gpu, m->mem);
  delete m;
}

namespace {

// The short and long spmv kernels for the matrix's value dtype and index
// width.
void spmv_shaders(const Matrix& m, ShaderId* short_id, ShaderId* long_id) {
  using namespace xhal_spirv;
  const bool i32 = m.narrow();
  switch (m.values_dtype) {
    case XHAL_DTYPE_F16:
      *short_id = i32 ? spmv_short_f16_i32 : spmv_short_f16;
      *long_id = i32 ? spmv_long_f16_i32 : spmv_long_f16;
      return;
    case XHAL_DTYPE_BF16:
      *short_id = i32 ? spmv_short_bf16_i32 : spmv_short_bf16;
      *long_id = i32 ? spmv_long_bf16_i32 : spmv_long_bf16;
      return;
    case XHAL_DTYPE_F64:
      *short_id = i32 ? spmv_short_f64_i32 : spmv_short_f64;
      *long_id = i32 ? spmv_long_f64_i32 : spmv_long_f64;
      return;
    default:
      *short_id = i32 ? spmv_short_i32 : spmv_short;
      *long_id = i32 ? spmv_long_i32 : spmv_long;
  }
}

xhal_status_t multiply(Device* d, const Matrix& m, xhal_transpose_t trans, float alpha,
                       const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  std::lock_guard lock(d->mutex);
  ShaderId short_id, long_id;
  spmv_shaders(m, &short_id, &long_id);
  VkPipeline p[2];
  XHAL_VK_TRY(pipelines(d, {short_id, long_id}, p));
  const bool t = trans == XHAL_TRANSPOSE;
  const Pattern& pat = t ? m.at : m.a;
  const uint64_t k = columns(y);
  if (pat.rows == 0 || k == 0) return XHAL_OK;
  SpmvPush push{};
  push.row_ptr = m.addr(pat.row_ptr_at);
  push.col = m.addr(pat.col_at);
  push.perm = t ? m.addr(pat.perm_at) : 0;
  push.values = m.values_addr();
  push.x = address_of(x);
  push.y = address_of(y);
  push.k = k;
  push.alpha = alpha;
  push.beta = beta;
  push.beta_zero = beta == 0.0f ? 1u : 0u;
  XHAL_VK_TRY(d->begin());
  if (pat.short_count) {
    push.list = m.addr(pat.short_at);
    push.count = pat.short_count;
    d->dispatch(p[0], &push, sizeof push, d->groups_for(push.count * k, 256));
  }
  if (pat.long_count) {
    push.list = m.addr(pat.long_at);
    push.count = pat.long_count;
    d->dispatch(p[1], &push, sizeof push, d->groups_for(push.count * k, 1));
  }
  return d->submit();
}

// The walk a solve of op(A) with this triangle takes, or null when the
// pattern does not lie in that triangle.
const Walk* walk_for(const Matrix& m, xhal_transpose_t trans, xhal_triangle_t triangle) {
  const bool t = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != t;
  const Walk& w = (t ? m.at : m.a).walk[ascending ? 1 : 0];
  return w.built ? &w : nullptr;
}

// Invocations of the one-workgroup runs: the option, else 64 on a CPU
// device (lavapipe) and 1024 elsewhere, within the device's limits.
uint32_t run_size(const Device* d) {
  uint32_t want = d->options.solve_run;
  if (want == 0) want = d->gpu->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 64 : 1024;
  const auto& lim = d->gpu->props.limits;
  while (want > 64 &&
         (want > lim.maxComputeWorkGroupInvocations || want > lim.maxComputeWorkGroupSize[0]))
    want /= 4;
  return want;
}

// The solve kernels for the matrix's index width and value dtype (f32 or
// f64).
ShaderId run_shader(uint32_t size, const Matrix& m) {
  using namespace xhal_spirv;
  const int s = size == 1024 ? 2 : size == 256 ? 1 : 0;
  static const ShaderId ids[2][2][3] = {
      {{solve_run64, solve_run256, solve_run1024},
       {solve_run64_i32, solve_run256_i32, solve_run1024_i32}},
      {{solve_run64_f64, solve_run256_f64, solve_run1024_f64},
       {solve_run64_f64_i32, solve_run256_f64_i32, solve_run1024_f64_i32}}};
  return ids[m.values_dtype == XHAL_DTYPE_F64][m.narrow()][s];
}
ShaderId level_shader(const Matrix& m) {
  using namespace xhal_spirv;
  if (m.values_dtype == XHAL_DTYPE_F64) return m.narrow() ? solve_level_f64_i32 : solve_level_f64;
  return m.narrow() ? solve_level_i32 : solve_level;
}
ShaderId grad_shader(const Matrix& m) {
  using namespace xhal_spirv;
  if (m.values_dtype == XHAL_DTYPE_F64) return m.narrow() ? solve_grad_f64_i32 : solve_grad_f64;
  return m.narrow() ? solve_grad_i32 : solve_grad;
}

// Records the solve of op(A) x = b along walk w: runs of narrow levels in
// one workgroup, wide levels over the whole device (step 1, then step 2
// where the level has long rows), a barrier between any two dispatches.
xhal_status_t record_solve(Device* d, const Matrix& m, xhal_transpose_t trans,
                           xhal_triangle_t triangle, xhal_diagonal_t diagonal, uint64_t b,
                           uint64_t x, uint64_t k, VkPipeline run, uint32_t run_invocations,
                           VkPipeline level) {
  const bool t = trans == XHAL_TRANSPOSE;
  const bool ascending = (triangle == XHAL_TRIANGLE_LOWER) != t;
  const Pattern& pat = t ? m.at : m.a;
  const Walk* wp = walk_for(m, trans, triangle);
  if (!wp)
    return fail(
        XHAL_INVALID_STRUCTURE,
        "csr_solve: argument 'triangle' is %s but the pattern does not lie in that triangle",
        triangle == XHAL_TRIANGLE_LOWER ? "lower" : "upper");
  const Walk& w = *wp;
  SolvePush push{};
  push.row_ptr = m.addr(pat.row_ptr_at);
  push.col = m.addr(pat.col_at);
  push.perm = t ? m.addr(pat.perm_at) : 0;
  push.values = m.values_addr();
  push.b = b;
  push.x = x;
  push.order = m.addr(w.order_at);
  push.level_ptr = m.addr(w.level_ptr_at);
  push.long_ptr = m.addr(w.long_ptr_at);
  push.long_first = m.addr(w.long_first_at);
  push.chunks = m.addr(w.chunks_at);
  push.partial = w.chunks ? d->scratch.address : 0;
  push.recs = m.addr(w.recs_at);
  push.k = static_cast<uint32_t>(k);
  const uint32_t flags = (diagonal == XHAL_DIAGONAL_UNIT ? 1u : 0u) | (ascending ? 2u : 0u) |
                         (d->options.solve_ahead ? 8u : 0u);
  const uint64_t levels = w.step1.size();
  bool first = true;
  auto emit = [&](VkPipeline p, uint64_t begin, uint64_t end, uint32_t step2, uint64_t groups) {
    if (!first) d->barrier();
    first = false;
    push.begin = begin;
    push.end = end;
    push.flags = flags | step2;
    d->dispatch(p, &push, sizeof push, groups);
  };
  const uint64_t narrow = d->options.solve_narrow
                              ? d->options.solve_narrow
                              : (d->gpu->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU
                                     ? 4 * uint64_t{run_invocations}
                                     : 2 * uint64_t{run_invocations});
  // Loop iterations one invocation of a run spends on a level (its share
  // of the step-1 items, each at most one chunk of 32 entries, and of the
  // step-2 items, each pushing its row's chunk sums, plus the loops' own
  // steps): runs are cut before they reach the device's loop budget.
  const uint64_t budget = d->gpu->loop_budget;
  const uint64_t size = run_invocations;
  uint64_t run_begin = 0, run_cost = 0;
  for (uint64_t l = 0; l < levels; ++l) {
    const uint64_t items1 = static_cast<uint64_t>(w.step1[l]) * k;
    const uint64_t items2 = static_cast<uint64_t>(w.longs[l]) * k;
    if (items1 <= narrow && items2 <= narrow) {
      uint64_t cost = (items1 + size - 1) / size * (kChunk + 8) + 4;
      if (items2)
        cost += (items2 + size - 1) / size * (2 * static_cast<uint64_t>(w.most_chunks[l]) + 8) + 4;
      if (run_begin < l && run_cost + cost > budget) {
        emit(run, run_begin, l, 0, 1);
        run_begin = l;
        run_cost = 0;
      }
      run_cost += cost;
      continue;
    }
    if (run_begin < l) emit(run, run_begin, l, 0, 1);
    run_cost = 0;
    emit(level, l, l + 1, 0, d->groups_for(items1, 256));
    if (items2) emit(level, l, l + 1, 4, d->groups_for(items2, 256));
    run_begin = l + 1;
  }
  if (run_begin < levels) emit(run, run_begin, levels, 0, 1);
  return XHAL_OK;
}

// Scratch for the chunk sums of the long rows (before the op records).
xhal_status_t solve_scratch(Device* d, const Matrix& m, const Walk* w, uint64_t k) {
  if (!w || w->chunks == 0) return XHAL_OK;
  return d->need_scratch(w->chunks * k * (m.values_dtype == XHAL_DTYPE_F64 ? 8 : 4));
}

}  // namespace

xhal_status_t spmv(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return multiply(dev(device), *static_cast<Matrix*>(a), trans, alpha, x, beta, y);
}

xhal_status_t spmm(void* device, void* a, xhal_transpose_t trans, float alpha,
                   const xhal_plugin_tensor_t* x, float beta, const xhal_plugin_tensor_t* y) {
  return multiply(dev(device), *static_cast<Matrix*>(a), trans, alpha, x, beta, y);
}

xhal_status_t csr_solve(void* device, void* a, xhal_transpose_t trans, xhal_triangle_t triangle,
                        xhal_diagonal_t diagonal, const xhal_plugin_tensor_t* b,
                        const xhal_plugin_tensor_t* x) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const auto& m = *static_cast<Matrix*>(a);
  XHAL_VK_TRY(require_dtype(m, "csr_solve"));
  const uint32_t size = run_size(d);
  VkPipeline p[2];
  XHAL_VK_TRY(pipelines(d, {run_shader(size, m), level_shader(m)}, p));
  const uint64_t k = columns(x);
  if (m.rows == 0 || k == 0) return XHAL_OK;
  XHAL_VK_TRY(solve_scratch(d, m, walk_for(m, trans, triangle), k));
  XHAL_VK_TRY(d->begin());
  const xhal_status_t s = record_solve(d, m, trans, triangle, diagonal, address_of(b),
                                       address_of(x), k, p[0], size, p[1]);
  if (s != XHAL_OK) {
    d->abandon();
    return s;
  }
  return d->submit();
}

xhal_status_t csr_solve_backward(void* device, void* a, xhal_transpose_t trans,
                                 xhal_triangle_t triangle, xhal_diagonal_t diagonal,
                                 const xhal_plugin_tensor_t* x, const xhal_plugin_tensor_t* dx,
                                 const xhal_plugin_tensor_t* gb, const xhal_plugin_tensor_t* ga) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const auto& m = *static_cast<Matrix*>(a);
  XHAL_VK_TRY(require_dtype(m, "csr_solve_backward"));
  const uint32_t size = run_size(d);
  VkPipeline p[3];
  XHAL_VK_TRY(pipelines(d, {run_shader(size, m), level_shader(m), grad_shader(m)}, p));
  const uint64_t k = columns(x);
  // gb = solve(op(A)^T, dx): the other transpose, same stored triangle.
  const xhal_transpose_t flipped = trans == XHAL_TRANSPOSE ? XHAL_TRANSPOSE_NONE : XHAL_TRANSPOSE;
  if (m.rows > 0 && k > 0) XHAL_VK_TRY(solve_scratch(d, m, walk_for(m, flipped, triangle), k));
  XHAL_VK_TRY(d->begin());
  if (m.rows > 0 && k > 0) {
    const xhal_status_t s = record_solve(d, m, flipped, triangle, diagonal, address_of(dx),
                                         address_of(gb), k, p[0], size, p[1]);
    if (s != XHAL_OK) {
      d->abandon();
      return s;
    }
  }
  if (ga && m.nnz > 0) {
    d->barrier();
    GradPush push{m.addr(m.row_idx_at),
                  m.addr(m.a.col_at),
                  address_of(x),
                  address_of(gb),
                  address_of(ga),
                  static_cast<uint64_t>(m.nnz),
                  k,
                  trans == XHAL_TRANSPOSE ? 1u : 0u,
                  diagonal == XHAL_DIAGONAL_UNIT ? 1u : 0u};
    d->dispatch(p[2], &push, sizeof push, d->groups_for(push.nnz, 256));
  }
  return d->submit();
}

xhal_status_t spgemm_numeric(void* device, void* a, void* b, void* c) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const auto& ma = *static_cast<Matrix*>(a);
  const auto& mb = *static_cast<Matrix*>(b);
  const auto& mc = *static_cast<Matrix*>(c);
  for (const Matrix* m : {&ma, &mb, &mc}) XHAL_VK_TRY(require_dtype(*m, "spgemm"));
  if (ma.values_dtype != mb.values_dtype || ma.values_dtype != mc.values_dtype)
    return fail(XHAL_INVALID_ARGUMENT, "spgemm: A, B and C differ in value dtype");
  if (mc.nnz == 0) return XHAL_OK;
  VkPipeline p[1];
  const bool f64 = ma.values_dtype == XHAL_DTYPE_F64;
  XHAL_VK_TRY(pipelines(d, {f64 ? xhal_spirv::spgemm_f64 : xhal_spirv::spgemm}, p));
  const SpgemmPush push{
      ma.addr(ma.a.row_ptr_at),
      ma.addr(ma.a.col_at),
      ma.values_addr(),
      mb.addr(mb.a.row_ptr_at),
      mb.addr(mb.a.col_at),
      mb.values_addr(),
      mc.addr(mc.row_idx_at),
      mc.addr(mc.a.col_at),
      mc.values_addr(),
      static_cast<uint64_t>(mc.nnz),
      (ma.narrow() ? 1u : 0u) | (mb.narrow() ? 2u : 0u) | (mc.narrow() ? 4u : 0u)};
  XHAL_VK_TRY(d->begin());
  d->dispatch(p[0], &push, sizeof push, d->groups_for(push.nnz, 256));
  return d->submit();
}

}  // namespace xhal::vk
