// index_plan_create_from_buffer (plugin ABI 1.5): the plan index_plan.cpp
// builds from a host list, built on the device from indices already there
// (docs/interop.md, "Index plans from device tensors"). The list is never
// read to the host; one 256-byte status block is (the counts that size the
// plan's arrays, and the first out-of-range index).
//
//  1. widen and check every index; the lowest bad position by atomicMin;
//  2. stable sort of (index, position) by index: one stable split per bit of
//     num_rows - 1, so the sources of a row stay in ascending order;
//  3. the touched rows and their source ranges (heads of equal runs);
//  4. counts (direct rows, long rows, chunks, chunk-tree rounds) -> status
//     block -> host; the arrays are allocated at their exact sizes;
//  5. the schedule of index_schedule.cpp, filled by scans in the same order.
//
// Every scan is an exclusive prefix sum over tiles (per-tile sums, one block
// scanning the tile sums, per-tile scans): integer sums, so the plan is the
// same bits whatever the launch shape. Costs O(count * bits(num_rows)).
#include <new>

#include "index_plan.h"

namespace xhal::gpu {
namespace {

constexpr int kThreads = 256, kItems = 8;
constexpr int64_t kTile = int64_t{kThreads} * kItems;
constexpr int kMaxRounds = 13;  // ceil(log32(2^63)) rounds of the chunk tree

// The status block read back to the host once.
struct Status {
  unsigned long long bad_position;  // ~0: every index is in range
  long long bad_value;
  long long touched, direct, num_long, chunks, max_chunks;
  long long round_triples[kMaxRounds];
  long long zeros;  // scratch of the sort's splits
  long long reserved[11];
};
static_assert(sizeof(Status) == 256, "docs/interop.md: a 256-byte status block");

// Exclusive scan of one value per thread across the block; *total gets the
// block's sum.
__device__ int64_t block_exclusive_scan(int64_t v, int64_t* total) {
  __shared__ int64_t s[kThreads];
  const int t = threadIdx.x;
  s[t] = v;
  __syncthreads();
  for (int off = 1; off < kThreads; off <<= 1) {
    const int64_t x = t >= off ? s[t - off] : 0;
    __syncthreads();
    s[t] += x;
    __syncthreads();
  }
  const int64_t inclusive = s[t];
  *total = s[kThreads - 1];
  __syncthreads();  // s is reused by the next call
  return inclusive - v;
}

// Pass 1 of a scan: the sum of f over each tile.
template <class F>
__global__ void tile_sums_kernel(F f, int64_t n, int64_t* sums) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t v = 0;
    const int64_t i0 = tile * kTile + threadIdx.x * int64_t{kItems};
    for (int j = 0; j < kItems; ++j)
      if (i0 + j < n) v += f(i0 + j);
    int64_t total = 0;
    block_exclusive_scan(v, &total);
    if (threadIdx.x == 0) sums[tile] = total;
  }
}

// Pass 2, one block: tile sums -> exclusive offsets in place; *total gets
// the sum of all.
__global__ void scan_sums_kernel(int64_t* sums, int64_t tiles, long long* total) {
  int64_t carry = 0;
  for (int64_t base = 0; base < tiles; base += kTile) {
    int64_t v[kItems], sum = 0;
    const int64_t i0 = base + threadIdx.x * int64_t{kItems};
    for (int j = 0; j < kItems; ++j) {
      v[j] = i0 + j < tiles ? sums[i0 + j] : 0;
      sum += v[j];
    }
    int64_t chunk = 0;
    int64_t run = carry + block_exclusive_scan(sum, &chunk);
    for (int j = 0; j < kItems; ++j)
      if (i0 + j < tiles) {
        sums[i0 + j] = run;
        run += v[j];
      }
    carry += chunk;
  }
  if (threadIdx.x == 0 && total) *total = carry;
}

// Pass 3: g(i, exclusive prefix of f at i, f(i)) for every i < n.
template <class F, class G>
__global__ void tile_apply_kernel(F f, G g, int64_t n, const int64_t* offsets) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
    int64_t v[kItems], sum = 0;
    const int64_t i0 = tile * kTile + threadIdx.x * int64_t{kItems};
    for (int j = 0; j < kItems; ++j) {
      v[j] = i0 + j < n ? f(i0 + j) : 0;
      sum += v[j];
    }
    int64_t total = 0;
    int64_t run = offsets[tile] + block_exclusive_scan(sum, &total);
    for (int j = 0; j < kItems; ++j)
      if (i0 + j < n) {
        g(i0 + j, run, v[j]);
        run += v[j];
      }
  }
}

#define XHAL_GPU_TRY(expr)            \
  do {                                \
    const xhal_status_t st_ = (expr); \
    if (st_ != XHAL_OK) return st_;   \
  } while (0)

inline unsigned tile_grid(int64_t n) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  return static_cast<unsigned>(tiles < 1 ? 1 : tiles > (1 << 20) ? (1 << 20) : tiles);
}

// The device arrays one build needs besides the plan's own.
struct Work {
  int64_t *keys[2], *vals[2];
  int64_t* tile_sums;
  int64_t *touched_rows, *touched_ptr;  // [n], [n + 1]
  int64_t* long_index;                  // [n]: touched row -> its long-row number
  int64_t* long_chunks;                 // [n]: long row -> its chunk count
  Status* status;
};

// Runs f over [0, n) as an exclusive scan, calling g with each prefix;
// `total` (device) gets the sum when not NULL. Three launches.
template <class F, class G>
void scan(Device* d, const Work& w, int64_t n, F f, G g, long long* total) {
  const unsigned grid = tile_grid(n);
  const int64_t tiles = (n + kTile - 1) / kTile;
  tile_sums_kernel<<<grid, kThreads, 0, d->stream>>>(f, n, w.tile_sums);
  scan_sums_kernel<<<1, kThreads, 0, d->stream>>>(w.tile_sums, tiles, total);
  tile_apply_kernel<<<grid, kThreads, 0, d->stream>>>(f, g, n, w.tile_sums);
}

template <class I>
__global__ void widen_check_kernel(const I* __restrict__ in, int64_t n, int64_t num_rows,
                                   int64_t* __restrict__ indices, int64_t* __restrict__ keys,
                                   int64_t* __restrict__ vals, Status* st) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t v = static_cast<int64_t>(in[i]);
    if (v < 0 || v >= num_rows) atomicMin(&st->bad_position, static_cast<unsigned long long>(i));
    indices[i] = v;
    keys[i] = v;
    vals[i] = i;
  }
}

__global__ void bad_value_kernel(const int64_t* indices, Status* st) {
  if (st->bad_position != ~0ull) st->bad_value = indices[st->bad_position];
}

// One stable split of the sort: zeros of bit `bit` first, in order.
struct SplitFlag {
  const int64_t* keys;
  int bit;
  __device__ int64_t operator()(int64_t i) const { return 1 - ((keys[i] >> bit) & 1); }
};
struct SplitMove {
  const int64_t *keys_in, *vals_in;
  int64_t *keys_out, *vals_out;
  const long long* zeros;
  __device__ void operator()(int64_t i, int64_t zeros_before, int64_t is_zero) const {
    const int64_t to = is_zero ? zeros_before : *zeros + (i - zeros_before);
    keys_out[to] = keys_in[i];
    vals_out[to] = vals_in[i];
  }
};

// Heads of runs of equal rows: the touched rows and where their sources start.
struct HeadFlag {
  const int64_t* keys;
  __device__ int64_t operator()(int64_t i) const { return i == 0 || keys[i] != keys[i - 1]; }
};
struct HeadWrite {
  const int64_t* keys;
  int64_t *rows, *ptr;
  int64_t n;
  __device__ void operator()(int64_t i, int64_t before, int64_t head) const {
    if (head) {
      rows[before] = keys[i];
      ptr[before] = i;
    }
    if (i == n - 1) ptr[before + head] = n;
  }
};

__device__ int64_t chunks_of(int64_t m) { return (m + kIndexChunk - 1) / kIndexChunk; }

// The counts that size the plan, reduced per block then once per block.
__global__ void count_kernel(const int64_t* ptr, const long long* touched, Status* st) {
  __shared__ unsigned long long sum[4 + kMaxRounds];
  __shared__ unsigned long long max_chunks;
  for (int k = threadIdx.x; k < 4 + kMaxRounds; k += blockDim.x) sum[k] = 0;
  if (threadIdx.x == 0) max_chunks = 0;
  __syncthreads();
  const int64_t t_end = *touched;
  unsigned long long direct = 0, num_long = 0, chunks = 0, most = 0;
  unsigned long long rounds[kMaxRounds] = {};
  for (int64_t t = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; t < t_end;
       t += int64_t{gridDim.x} * blockDim.x) {
    const int64_t m = ptr[t + 1] - ptr[t];
    if (m <= kIndexChunk) {
      ++direct;
      continue;
    }
    int64_t c = chunks_of(m);
    ++num_long;
    chunks += static_cast<unsigned long long>(c);
    most = most > static_cast<unsigned long long>(c) ? most : static_cast<unsigned long long>(c);
    for (int g = 0; g < kMaxRounds; ++g) {
      c = chunks_of(c);  // this round's triples, and the row's values after it
      rounds[g] += static_cast<unsigned long long>(c);
    }
  }
  atomicAdd(&sum[0], direct);
  atomicAdd(&sum[1], num_long);
  atomicAdd(&sum[2], chunks);
  for (int g = 0; g < kMaxRounds; ++g) atomicAdd(&sum[4 + g], rounds[g]);
  atomicMax(&max_chunks, most);
  __syncthreads();
  if (threadIdx.x == 0) {
    atomicAdd(reinterpret_cast<unsigned long long*>(&st->direct), sum[0]);
    atomicAdd(reinterpret_cast<unsigned long long*>(&st->num_long), sum[1]);
    atomicAdd(reinterpret_cast<unsigned long long*>(&st->chunks), sum[2]);
    for (int g = 0; g < kMaxRounds; ++g)
      atomicAdd(reinterpret_cast<unsigned long long*>(&st->round_triples[g]), sum[4 + g]);
    atomicMax(reinterpret_cast<unsigned long long*>(&st->max_chunks), max_chunks);
  }
}

// The schedule's fills, in touched-row order as build_index_add_schedule.
struct Touched {
  const int64_t* ptr;
  int64_t touched;
  __device__ int64_t m(int64_t t) const { return ptr[t + 1] - ptr[t]; }
};
struct DirectFlag {
  Touched tr;
  __device__ int64_t operator()(int64_t t) const { return tr.m(t) <= kIndexChunk; }
};
struct DirectWrite {
  Touched tr;
  const int64_t *rows, *sources;
  DirectRow* out;
  __device__ void operator()(int64_t t, int64_t before, int64_t is_direct) const {
    if (!is_direct) return;
    const int64_t e0 = tr.ptr[t], m = tr.m(t);
    out[before] = direct_row(rows[t], sources, e0, m);
  }
};
struct LongFlag {
  Touched tr;
  __device__ int64_t operator()(int64_t t) const { return tr.m(t) > kIndexChunk; }
};
struct LongWrite {
  Touched tr;
  const int64_t* rows;
  int64_t *long_rows, *long_index, *long_chunks;
  __device__ void operator()(int64_t t, int64_t before, int64_t is_long) const {
    if (!is_long) return;
    long_rows[before] = rows[t];
    long_index[t] = before;
    long_chunks[before] = chunks_of(tr.m(t));
  }
};
struct ChunkCount {
  Touched tr;
  __device__ int64_t operator()(int64_t t) const {
    const int64_t m = tr.m(t);
    return m > kIndexChunk ? chunks_of(m) : 0;
  }
};
struct ChunkWrite {
  Touched tr;
  const int64_t* long_index;
  int64_t *long_base, *chunk_begin;
  int32_t* chunk_len;
  __device__ void operator()(int64_t t, int64_t before, int64_t c) const {
    if (!c) return;
    long_base[long_index[t]] = before;
    const int64_t e0 = tr.ptr[t], e1 = tr.ptr[t + 1];
    for (int64_t j = 0; j < c; ++j) {
      const int64_t b = e0 + kIndexChunk * j;
      chunk_begin[before + j] = b;
      chunk_len[before + j] = static_cast<int32_t>(e1 - b < kIndexChunk ? e1 - b : kIndexChunk);
    }
  }
};
// Round `round` of the chunk tree: a long row holding c values emits
// ceil(c / 32) triples (first, count, out).
__device__ int64_t values_before_round(int64_t c, int round) {
  for (int g = 0; g < round; ++g) c = chunks_of(c);
  return c;
}
struct RoundCount {
  const int64_t* long_chunks;
  int round;
  __device__ int64_t operator()(int64_t k) const {
    return chunks_of(values_before_round(long_chunks[k], round));
  }
};
struct RoundWrite {
  const int64_t *long_chunks, *long_base;
  int round;
  int64_t* triples;  // this round's first triple
  __device__ void operator()(int64_t k, int64_t before, int64_t groups) const {
    const int64_t c = values_before_round(long_chunks[k], round), base = long_base[k];
    for (int64_t g = 0; g < groups; ++g) {
      int64_t* t = triples + 3 * (before + g);
      const int64_t left = c - kIndexChunk * g;
      t[0] = base + kIndexChunk * g;
      t[1] = left < kIndexChunk ? left : kIndexChunk;
      t[2] = base + g;
    }
  }
};

// Device memory of one build: plan arrays with gpuMalloc (free_plan frees
// them), work arrays stream-ordered where the device can.
template <class T>
xhal_status_t plan_alloc(int64_t n, T** out) {
  *out = nullptr;
  if (n == 0) return XHAL_OK;
  const gpuError_t e = gpuMalloc(reinterpret_cast<void**>(out), sizeof(T) * n);
  return e == gpuSuccess ? XHAL_OK : runtime_error(e, "allocating plan memory");
}

struct WorkMemory {
  Device* d;
  void* base = nullptr;
  explicit WorkMemory(Device* dev) : d(dev) {}
  xhal_status_t allocate(size_t bytes) {
    const gpuError_t e =
        d->stream_ordered_alloc ? gpuMallocAsync(&base, bytes, d->stream) : gpuMalloc(&base, bytes);
    if (e != gpuSuccess) {
      base = nullptr;
      return runtime_error(e, "allocating index plan work memory");
    }
    return XHAL_OK;
  }
  ~WorkMemory() {
    if (!base) return;
    if (d->stream_ordered_alloc) gpuFreeAsync(base, d->stream);
    else {
      gpuStreamSynchronize(d->stream);
      gpuFree(base);
    }
  }
};

int bits_for(uint64_t num_rows) {
  int b = 0;
  while (b < 64 && ((num_rows - 1) >> b) != 0) ++b;
  return b;
}

xhal_status_t build(Device* d, const void* in, xhal_dtype_t dtype, int64_t n, int64_t num_rows,
                    Plan* p, xhal_plugin_index_fault_t* out_fault) {
  const int64_t tiles = (n + kTile - 1) / kTile;
  WorkMemory mem(d);
  // keys x2, vals x2, touched rows, touched ptr (+1), long index, long chunks,
  // tile sums, the status block.
  const size_t words = size_t(8) * n + 1 + tiles;
  XHAL_GPU_TRY(mem.allocate(words * sizeof(int64_t) + sizeof(Status) + 64));
  Work w{};
  int64_t* m = static_cast<int64_t*>(mem.base);
  w.keys[0] = m;
  w.keys[1] = m + n;
  w.vals[0] = m + 2 * n;
  w.vals[1] = m + 3 * n;
  w.touched_rows = m + 4 * n;
  w.long_index = m + 5 * n;
  w.long_chunks = m + 6 * n;
  w.touched_ptr = m + 7 * n;  // n + 1
  w.tile_sums = m + 8 * n + 1;
  w.status = reinterpret_cast<Status*>(m + words);
  gpuError_t e = gpuMemsetAsync(w.status, 0, sizeof(Status), d->stream);
  if (e == gpuSuccess)
    e = gpuMemsetAsync(&w.status->bad_position, 0xff, sizeof(unsigned long long), d->stream);
  if (e != gpuSuccess) return runtime_error(e, "clearing the index plan status");

  XHAL_GPU_TRY(plan_alloc(n, &p->indices));
  XHAL_GPU_TRY(plan_alloc(n, &p->row_sources));
  const unsigned grid = grid_for(n, kThreads);
  if (dtype == XHAL_DTYPE_I32)
    widen_check_kernel<<<grid, kThreads, 0, d->stream>>>(
        static_cast<const int32_t*>(in), n, num_rows, p->indices, w.keys[0], w.vals[0], w.status);
  else
    widen_check_kernel<<<grid, kThreads, 0, d->stream>>>(
        static_cast<const int64_t*>(in), n, num_rows, p->indices, w.keys[0], w.vals[0], w.status);
  bad_value_kernel<<<1, 1, 0, d->stream>>>(p->indices, w.status);
  // An out-of-range list is sorted too (in bounds whatever its values: each
  // split is a permutation); its plan is dropped below.
  int cur = 0;
  const int bits = bits_for(static_cast<uint64_t>(num_rows));
  for (int b = 0; b < bits; ++b) {
    scan(d, w, n, SplitFlag{w.keys[cur], b},
         SplitMove{w.keys[cur], w.vals[cur], w.keys[1 - cur], w.vals[1 - cur], &w.status->zeros},
         &w.status->zeros);
    cur = 1 - cur;
  }
  e = gpuMemcpyAsync(p->row_sources, w.vals[cur], sizeof(int64_t) * n, gpuMemcpyDeviceToDevice,
                     d->stream);
  if (e != gpuSuccess) return runtime_error(e, "copying the index plan's sources");
  const int64_t* keys = w.keys[cur];
  scan(d, w, n, HeadFlag{keys}, HeadWrite{keys, w.touched_rows, w.touched_ptr, n},
       &w.status->touched);
  count_kernel<<<grid, kThreads, 0, d->stream>>>(w.touched_ptr, &w.status->touched, w.status);
  XHAL_GPU_TRY(check_launch(d, "index_plan_create_from_buffer", 6 + 3 * bits));

  Status st{};
  e = gpuMemcpyAsync(&st, w.status, sizeof st, gpuMemcpyDeviceToHost, d->stream);
  if (e == gpuSuccess) e = gpuStreamSynchronize(d->stream);
  d->d2h_transfers++;
  d->d2h_bytes += sizeof st;
  if (e != gpuSuccess) return runtime_error(e, "reading the index plan status");
  if (st.bad_position != ~0ull) {
    out_fault->position = st.bad_position;
    out_fault->value = st.bad_value;
    return XHAL_OUT_OF_RANGE;
  }

  const int64_t touched = st.touched;
  p->num_direct = st.direct;
  p->num_long = st.num_long;
  p->num_chunks = st.chunks;
  int rounds = 0;
  for (int64_t c = st.max_chunks; c > 1; c = (c + kIndexChunk - 1) / kIndexChunk) ++rounds;
  p->group_offsets.assign(1, 0);
  for (int g = 0; g < rounds; ++g)
    p->group_offsets.push_back(p->group_offsets.back() + st.round_triples[g]);
  XHAL_GPU_TRY(plan_alloc(p->num_direct, &p->direct));
  XHAL_GPU_TRY(plan_alloc(p->num_long, &p->long_rows));
  XHAL_GPU_TRY(plan_alloc(p->num_long, &p->long_base));
  XHAL_GPU_TRY(plan_alloc(p->num_chunks, &p->chunk_begin));
  XHAL_GPU_TRY(plan_alloc(p->num_chunks, &p->chunk_len));
  XHAL_GPU_TRY(plan_alloc(3 * p->group_offsets.back(), &p->group_triples));

  const Touched tr{w.touched_ptr, touched};
  int launches = 0;
  if (p->num_direct > 0) {
    scan(d, w, touched, DirectFlag{tr}, DirectWrite{tr, w.touched_rows, p->row_sources, p->direct},
         nullptr);
    launches += 3;
  }
  if (p->num_long > 0) {
    scan(d, w, touched, LongFlag{tr},
         LongWrite{tr, w.touched_rows, p->long_rows, w.long_index, w.long_chunks}, nullptr);
    scan(d, w, touched, ChunkCount{tr},
         ChunkWrite{tr, w.long_index, p->long_base, p->chunk_begin, p->chunk_len}, nullptr);
    launches += 6;
    for (int g = 0; g < rounds; ++g) {
      scan(d, w, p->num_long, RoundCount{w.long_chunks, g},
           RoundWrite{w.long_chunks, p->long_base, g, p->group_triples + 3 * p->group_offsets[g]},
           nullptr);
      launches += 3;
    }
  }
  return check_launch(d, "index_plan_create_from_buffer", launches);
}

}  // namespace

xhal_status_t index_plan_create_from_buffer(void* device, void* buffer, uint64_t offset,
                                            xhal_dtype_t index_dtype, uint64_t count,
                                            uint64_t num_rows, void** out_plan,
                                            xhal_plugin_index_fault_t* out_fault) {
  Device* d = enter(device);
  std::lock_guard lock(d->mutex);
  auto* p = new (std::nothrow) Plan;
  if (!p) return fail(XHAL_OUT_OF_MEMORY, "out of host memory building the index plan");
  p->count = static_cast<int64_t>(count);
  p->num_rows = static_cast<int64_t>(num_rows);
  const void* in = static_cast<const char*>(static_cast<Buffer*>(buffer)->ptr) + offset;
  xhal_status_t st = XHAL_OK;
  try {
    st = build(d, in, index_dtype, p->count, p->num_rows, p, out_fault);
  } catch (const std::bad_alloc&) {
    st = fail(XHAL_OUT_OF_MEMORY, "out of host memory building the index plan");
  }
  if (st != XHAL_OK) {
    gpuStreamSynchronize(d->stream);
    free_plan(p);
    return st;
  }
  *out_plan = p;
  return XHAL_OK;
}

}  // namespace xhal::gpu
