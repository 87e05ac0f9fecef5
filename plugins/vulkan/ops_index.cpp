// Index plans, index_select, index_add and permute. A plan is uploaded once
// (one staging transfer at index_plan_create) as int64 arrays: the indices,
// the sources grouped by touched row, and for rows with more than 32
// sources their chunks of 32 (index_add's segsum, docs/semantics.md 3.7).
// Ops only record dispatches: no op touches host memory.
#include <algorithm>
#include <new>
#include <vector>

#include "vk_plugin.h"

namespace xhal::vk {
namespace {

constexpr int64_t kSegChunk = 32;

struct IndexPlan {
  Mem mem;
  uint64_t count = 0;
  uint64_t touched = 0;
  uint64_t chunks = 0;       // chunks of the long rows
  uint32_t tree_levels = 0;  // ceil(log2(most chunks of one row))
  // Offsets (in int64 elements) of the arrays inside mem.
  // long_at: the per-row records {row, first source, sources, first chunk or -1}.
  uint64_t indices_at = 0, sources_at = 0, rows_at = 0, ptr_at = 0, long_at = 0, chunk_at = 0;
};

Device* dev(void* d) { return static_cast<Device*>(d); }

// Widest unit (16, 8, 4, 2, 1 bytes) that divides every value.
uint32_t widest_unit(std::initializer_list<uint64_t> values) {
  for (uint32_t u : {16u, 8u, 4u, 2u}) {
    bool ok = true;
    for (uint64_t v : values) ok = ok && v % u == 0;
    if (ok) return u;
  }
  return 1;
}

}  // namespace

xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  auto* plan = new (std::nothrow) IndexPlan;
  if (!plan) return fail(XHAL_OUT_OF_MEMORY, "host allocation failed");
  try {
    const uint64_t count = desc->count;
    // Touched rows and their source ranges: the compact 1.1 form, or (from a
    // 1.0 core, which fills row_ptr) derived from row_ptr.
    std::vector<int64_t> rows, ptr;
    if (desc->row_ptr == nullptr) {
      rows.assign(desc->touched_rows, desc->touched_rows + desc->touched_count);
      ptr.assign(desc->touched_ptr, desc->touched_ptr + desc->touched_count + 1);
    } else {
      ptr.push_back(0);
      for (uint64_t r = 0; r < desc->num_rows; ++r)
        if (desc->row_ptr[r + 1] > desc->row_ptr[r]) {
          rows.push_back(static_cast<int64_t>(r));
          ptr.push_back(desc->row_ptr[r + 1]);
        }
    }
    const uint64_t touched = rows.size();
    std::vector<int64_t> long_first(touched, -1), chunk;  // chunk: 4 fields each
    std::vector<int64_t> records;  // per touched row: row, first source, sources, first chunk
    int64_t most = 1;
    for (uint64_t k = 0; k < touched; ++k) {
      const int64_t m = ptr[k + 1] - ptr[k];
      if (m <= kSegChunk) continue;
      const int64_t n = (m + kSegChunk - 1) / kSegChunk;
      const int64_t first = static_cast<int64_t>(chunk.size() / 4);
      long_first[k] = first;
      most = std::max(most, n);
      for (int64_t c = 0; c < n; ++c) {
        chunk.push_back(ptr[k] + c * kSegChunk);
        chunk.push_back(std::min(kSegChunk, m - c * kSegChunk));
        chunk.push_back(first);
        chunk.push_back(n);
      }
    }
    records.reserve(4 * touched);
    for (uint64_t k = 0; k < touched; ++k) {
      records.push_back(rows[k]);
      records.push_back(ptr[k]);
      records.push_back(ptr[k + 1] - ptr[k]);
      records.push_back(long_first[k]);
    }
    plan->count = count;
    plan->touched = touched;
    plan->chunks = chunk.size() / 4;
    while ((int64_t{1} << plan->tree_levels) < most) ++plan->tree_levels;
    // One array: indices | sources | rows | ptr | long_first | chunks.
    std::vector<int64_t> all;
    all.reserve(2 * count + 3 * touched + 1 + chunk.size());
    plan->indices_at = all.size();
    all.insert(all.end(), desc->indices, desc->indices + count);
    plan->sources_at = all.size();
    if (count) all.insert(all.end(), desc->row_sources, desc->row_sources + count);
    plan->rows_at = all.size();
    all.insert(all.end(), rows.begin(), rows.end());
    plan->ptr_at = all.size();
    all.insert(all.end(), ptr.begin(), ptr.end());
    // The records start 32-byte aligned (one 32-byte load per row).
    while (all.size() % 4) all.push_back(0);
    plan->long_at = all.size();
    all.insert(all.end(), records.begin(), records.end());
    plan->chunk_at = all.size();
    all.insert(all.end(), chunk.begin(), chunk.end());
    const uint64_t bytes = all.size() * sizeof(int64_t);
    xhal_status_t s = mem_create(*d->gpu, bytes, false, &plan->mem);
    if (s == XHAL_OK && bytes) s = d->upload(plan->mem, 0, all.data(), bytes);
    if (s != XHAL_OK) {
      mem_destroy(*d->gpu, plan->mem);
      delete plan;
      return s;
    }
  } catch (const std::bad_alloc&) {
    mem_destroy(*d->gpu, plan->mem);
    delete plan;
    return fail(XHAL_OUT_OF_MEMORY, "host memory exhausted while building the plan");
  }
  *out_plan = plan;
  return XHAL_OK;
}

void index_plan_destroy(void* device, void* plan) {
  if (!plan) return;
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  d->wait_idle();
  auto* p = static_cast<IndexPlan*>(plan);
  mem_destroy(*d->gpu, p->mem);
  delete p;
}

namespace {
struct GatherPush {
  uint64_t src, out, idx, count, upr;
};
struct IndexAddPush {
  uint64_t src, dst, plan, partial, w, items;
  uint64_t sources_at, rows_at, ptr_at, long_at, chunk_at;
  float alpha;
  uint32_t level;
};
struct PermutePush {
  uint64_t src, dst, layout, total;
  uint32_t rank, narrow;
};
struct TransposePush {
  uint64_t src, dst, layout, n_a, n_b;
  int64_t sb, dsa;
  uint64_t batches;
  uint32_t nb;
};
static_assert(fits_push<GatherPush>() && fits_push<IndexAddPush>() && fits_push<PermutePush>() &&
              fits_push<TransposePush>());
}  // namespace

xhal_status_t index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                           const xhal_plugin_tensor_t* out) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const auto* p = static_cast<const IndexPlan*>(plan);
  const uint64_t elem = dtype_size(src->dtype);
  const uint64_t row_bytes = static_cast<uint64_t>(src->shape[1]) * elem;
  if (p->count == 0 || row_bytes == 0) return XHAL_OK;
  const uint64_t s = address_of(src), o = address_of(out);
  const uint32_t unit = widest_unit({s, o, row_bytes});
  const ShaderId id = unit == 16  ? xhal_spirv::gather_u128
                      : unit == 8 ? xhal_spirv::gather_u64
                      : unit == 4 ? xhal_spirv::gather_u32
                      : unit == 2 ? xhal_spirv::gather_u16
                                  : xhal_spirv::gather_u8;
  VkPipeline pl[1];
  XHAL_VK_TRY(pipelines(d, {id}, pl));
  const GatherPush push{s, o, p->mem.address + p->indices_at * 8, p->count, row_bytes / unit};
  XHAL_VK_TRY(d->begin());
  d->dispatch2d(pl[0], &push, sizeof push, (p->count * push.upr + 1023) / 1024);
  return d->submit();
}

xhal_status_t index_add(void* device, void* plan, float alpha, const xhal_plugin_tensor_t* src,
                        const xhal_plugin_tensor_t* dst) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const auto* p = static_cast<const IndexPlan*>(plan);
  const uint64_t w = static_cast<uint64_t>(src->shape[1]);
  if (p->touched == 0 || w == 0) return XHAL_OK;
  // Rows of a multiple of 4 elements on addresses aligned to 4 elements move
  // as one vec4 (f32) or uvec2 (f16/bf16) per item (index_add_vec4.comp; the
  // same additions per column). Narrow src/dst are widened on load (chunk
  // sums and T stay f32) and dst narrowed once (docs/semantics.md 7.2).
  // f64 (7.3) sums in binary64, partials included, and has no vec4 form.
  const xhal_dtype_t t = src->dtype;
  const bool f64 = t == XHAL_DTYPE_F64;
  if (p->chunks) XHAL_VK_TRY(d->need_scratch(p->chunks * w * (f64 ? 8 : 4)));
  const uint64_t four = 4 * dtype_size(t);
  const bool vec4 = !f64 && w % 4 == 0 && address_of(src) % four == 0 &&
                    address_of(dst) % four == 0 && (!p->chunks || d->scratch.address % 16 == 0);
  const uint64_t per_item = vec4 ? 4 : 1;
  using namespace xhal_spirv;
  auto pick = [t](ShaderId f32, ShaderId f16, ShaderId bf16) {
    return t == XHAL_DTYPE_F16 ? f16 : t == XHAL_DTYPE_BF16 ? bf16 : f32;
  };
  VkPipeline pl[3];
  if (f64)
    XHAL_VK_TRY(pipelines(d, {index_add_chunks_f64, index_add_tree_f64, index_add_apply_f64}, pl));
  else if (vec4)
    XHAL_VK_TRY(pipelines(
        d,
        {pick(index_add4_chunks, index_add4_chunks_f16, index_add4_chunks_bf16), index_add4_tree,
         pick(index_add4_apply, index_add4_apply_f16, index_add4_apply_bf16)},
        pl));
  else
    XHAL_VK_TRY(pipelines(
        d,
        {pick(index_add_chunks, index_add_chunks_f16, index_add_chunks_bf16), index_add_tree,
         pick(index_add_apply, index_add_apply_f16, index_add_apply_bf16)},
        pl));
  IndexAddPush push{};
  push.src = address_of(src);
  push.dst = address_of(dst);
  push.plan = p->mem.address;
  push.partial = p->chunks ? d->scratch.address : 0;
  push.w = w;
  push.sources_at = p->sources_at;
  push.rows_at = p->rows_at;
  push.ptr_at = p->ptr_at;
  push.long_at = p->long_at;
  push.chunk_at = p->chunk_at;
  push.alpha = alpha;
  XHAL_VK_TRY(d->begin());
  if (p->chunks) {
    push.items = p->chunks * w / per_item;
    d->dispatch(pl[0], &push, sizeof push, d->groups_for(push.items, 256));
    for (uint32_t level = 0; level < p->tree_levels; ++level) {
      d->barrier();
      push.level = level;
      d->dispatch(pl[1], &push, sizeof push, d->groups_for(push.items, 256));
    }
    d->barrier();
  }
  push.items = p->touched * w / per_item;
  // index_add.comp's apply takes 1024 items per workgroup, the vec4 one 256.
  d->dispatch2d(pl[2], &push, sizeof push,
                (push.items + (vec4 ? 255 : 1023)) / (vec4 ? 256 : 1024));
  return d->submit();
}

namespace {

// A 3-D grid (each count at most 65535; the transpose walks the rest).
void dispatch3d(Device* d, VkPipeline p, const void* push, uint32_t push_bytes, uint64_t x,
                uint64_t y, uint64_t z) {
  if (x == 0 || y == 0 || z == 0) return;
  if (p != d->bound) {
    d->vk().vkCmdBindPipeline(d->recording, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    d->bound = p;
    if (d->queries) d->profile_label(p);
  }
  d->vk().vkCmdPushConstants(d->recording, d->gpu->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                             (push_bytes + 3) / 4 * 4, push);
  const uint64_t cap_x = std::min<uint64_t>(d->gpu->max_groups_x, 65535);
  auto cap = [](uint64_t v, uint64_t c) { return static_cast<uint32_t>(v < c ? v : c); };
  d->vk().vkCmdDispatch(d->recording, cap(x, cap_x), cap(y, 65535), cap(z, 65535));
  d->launches.fetch_add(1, std::memory_order_relaxed);
}

// The tiled permute (transpose.comp): src has stride 1 along dim_a, dst
// along the last dim B; the other dims are batches, innermost first.
xhal_status_t transpose(Device* d, const xhal_plugin_tensor_t* src, const xhal_plugin_tensor_t* dst,
                        int dim_a, uint32_t elem, uint64_t total) {
  const int last = static_cast<int>(src->rank) - 1;
  struct {
    int64_t shape[6];
    int64_t src_stride[6];
    int64_t dst_stride[6];
  } lay{};
  // dst is contiguous over src's (already permuted) shape.
  int64_t dst_stride[8];
  int64_t step = 1;
  for (int k = last; k >= 0; --k) {
    dst_stride[k] = step;
    step *= src->shape[k];
  }
  uint32_t nb = 0;
  uint64_t batches = 1;
  bool nonneg = true;
  uint64_t src_max = 0;  // largest src offset (elements) when strides are non-negative
  for (int k = last; k >= 0; --k) {
    if (src->strides[k] < 0) nonneg = false;
    else
      src_max += static_cast<uint64_t>(src->shape[k] - 1) * static_cast<uint64_t>(src->strides[k]);
    if (k == dim_a || k == last || src->shape[k] == 1) continue;
    lay.shape[nb] = src->shape[k];
    lay.src_stride[nb] = src->strides[k];
    lay.dst_stride[nb] = dst_stride[k];
    batches *= static_cast<uint64_t>(src->shape[k]);
    ++nb;
  }
  TransposePush push{};
  push.src = address_of(src);
  push.dst = address_of(dst);
  push.layout = d->params.address;
  push.n_a = static_cast<uint64_t>(src->shape[dim_a]);
  push.n_b = static_cast<uint64_t>(src->shape[last]);
  push.sb = src->strides[last];
  push.dsa = dst_stride[dim_a];
  push.batches = batches;
  push.nb = nb;
  const auto mode = d->options.transpose;
  // 32-bit offsets: every dst offset and src offset below 2^32.
  const bool narrow = mode != Options::Transpose::kWide && nonneg && total < (uint64_t{1} << 32) &&
                      src_max < (uint64_t{1} << 32);
  // Runs of 4 elements of 4 bytes: both addresses 16-byte aligned, and every
  // run start (A and B offsets multiples of 4, batch strides too) aligned.
  bool runs = narrow && mode == Options::Transpose::kAuto && elem == 4 && push.src % 16 == 0 &&
              push.dst % 16 == 0 && push.n_a % 4 == 0 && push.n_b % 4 == 0 && push.sb % 4 == 0 &&
              push.dsa % 4 == 0;
  for (uint32_t k = 0; k < nb; ++k)
    runs = runs && lay.src_stride[k] % 4 == 0 && lay.dst_stride[k] % 4 == 0;
  const int step_id = elem == 8 ? 3 : elem == 4 ? 2 : elem == 2 ? 1 : 0;
  const ShaderId id = runs     ? xhal_spirv::transpose_u32_v4
                      : narrow ? static_cast<ShaderId>(xhal_spirv::transpose_u8 + step_id)
                               : static_cast<ShaderId>(xhal_spirv::transpose_u8_wide + step_id);
  const uint64_t tile = runs ? 64 : 32;
  VkPipeline pl[1];
  XHAL_VK_TRY(pipelines(d, {id}, pl));
  XHAL_VK_TRY(d->begin());
  d->update_params(&lay, sizeof lay);
  dispatch3d(d, pl[0], &push, sizeof push, (push.n_b + tile - 1) / tile,
             (push.n_a + tile - 1) / tile, batches);
  return d->submit();
}

}  // namespace

xhal_status_t permute(void* device, const xhal_plugin_tensor_t* src,
                      const xhal_plugin_tensor_t* dst) {
  Device* d = dev(device);
  std::lock_guard lock(d->mutex);
  const uint32_t elem = dtype_size(src->dtype);
  struct {
    int64_t shape[8];
    int64_t stride[8];
  } layout{};
  uint64_t total = 1;
  for (uint32_t k = 0; k < src->rank; ++k) {
    layout.shape[k] = src->shape[k];
    layout.stride[k] = src->strides[k];
    total *= static_cast<uint64_t>(src->shape[k]);
  }
  if (total == 0) return XHAL_OK;
  const int step = elem == 8 ? 3 : elem == 4 ? 2 : elem == 2 ? 1 : 0;
  // src contiguous along a dim other than the last (a transpose of it with
  // the last): shared-memory tiles, both sides coalesced, when both extents
  // fill a 32 x 32 tile (a narrow side would leave most of each tile idle;
  // the gather reads such short runs well enough).
  const int last = static_cast<int>(src->rank) - 1;
  int dim_a = -1;
  if (last >= 1 && src->strides[last] != 1 && src->shape[last] >= 32)
    for (int k = 0; k < last; ++k)
      if (src->strides[k] == 1 && src->shape[k] >= 32 &&
          (dim_a < 0 || src->shape[k] > src->shape[dim_a]))
        dim_a = k;
  VkPipeline pl[1];
  if (dim_a >= 0) return transpose(d, src, dst, dim_a, elem, total);
  XHAL_VK_TRY(pipelines(d, {static_cast<ShaderId>(xhal_spirv::permute_u8 + step)}, pl));
  const PermutePush push{address_of(src), address_of(dst), d->params.address,
                         total,           src->rank,       total < (uint64_t{1} << 32) ? 1u : 0u};
  XHAL_VK_TRY(d->begin());
  d->update_params(&layout, sizeof layout);
  d->dispatch2d(pl[0], &push, sizeof push, (total + 1023) / 1024);
  return d->submit();
}

}  // namespace xhal::vk
