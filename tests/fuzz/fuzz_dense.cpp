// libFuzzer harness (c): tensor descriptors fed to every dense op of the
// public API on the cpu device: buffer sizes, offsets, dtypes (raw enum
// values too), ranks, shapes, strides, permutations and aliasing between
// arguments all come from the input. Each input runs up to 8 calls, then
// releases everything it made.
//
// Oracles: the sanitizers; every status in the enum with a message exactly
// when it fails; a failed call leaves every buffer and out-argument as it
// was; xhal_tensor_init / xhal_tensor_permute_view results match their
// definition.
//
// Layout (make_corpus.py mirrors it): calls = 1 + pick(8); then per call
// op = pick(kOps) and the op's own reads.
#include <cstring>
#include <vector>

#include "fuzz_support.h"
#include "raw_calls.h"

using namespace xhal_fuzz;

namespace {

constexpr uint32_t kOps = 13;
constexpr uint32_t kMaxPlanCount = 64;

struct PlanRecord {
  xhal_index_plan_t plan;
  int64_t count, num_rows;
  bool released = false;  // its handle is stale (and still in play)
};

// Row-wise ops view x as [rows, n]: small dims from the input.
struct RowShape {
  int64_t rows, n;
};
RowShape row_shape(Input& in) { return {in.range(0, 16), in.range(0, 48)}; }

void out_tensor_check(const xhal_tensor_t& got, const unsigned char* before, xhal_status_t s,
                      const char* call) {
  if (s != XHAL_OK && std::memcmp(&got, before, sizeof got) != 0)
    broken("a failed call wrote its out_tensor", call, s);
}

void run_tensor_init(Input& in, Pool& pool) {
  const int64_t bytes = in.range(0, 4096);
  const uint32_t seed = in.u32();
  const int i = pool.add(static_cast<uint64_t>(bytes), seed, false);
  xhal_buffer_t buffer = (in.pick(6) == 0 || i < 0) ? nullptr : pool.at(i);
  const uint64_t offset = in.flag() ? in.range(0, 64) : in.u64();
  uint32_t dtype = dtype_bits(in);
  const uint32_t rank = in.flag() ? in.pick(XHAL_MAX_RANK + 1) : in.u32();
  // Longer than any valid rank: a core that reads shape[rank - 1] before
  // rejecting the rank shows up as an overflow of this array.
  int64_t shape[2 * XHAL_MAX_RANK];
  for (int64_t& d : shape) d = in.flag() ? in.range(0, 64) : in.i64();
  xhal_tensor_t out;
  std::memset(&out, 0xA5, sizeof out);
  unsigned char before[sizeof out];
  std::memcpy(before, &out, sizeof out);
  const bool null_shape = in.pick(8) == 0;
  const xhal_status_t s =
      XF_CALL(raw_tensor_init(buffer, offset, dtype, rank, null_shape ? nullptr : shape, &out));
  out_tensor_check(out, before, s, "xhal_tensor_init");
  if (s == XHAL_OK) {
    uint32_t got_dtype;
    std::memcpy(&got_dtype, &out.dtype, sizeof got_dtype);
    if (out.buffer != buffer || out.offset != offset || got_dtype != dtype || out.rank != rank ||
        rank > XHAL_MAX_RANK)
      broken("xhal_tensor_init: descriptor fields differ from the arguments", "xhal_tensor_init",
             s);
    for (uint32_t k = 0; k < rank; ++k)
      if (out.shape[k] != shape[k] || out.strides[k] != 0)
        broken("xhal_tensor_init: shape not copied or strides not zero", "xhal_tensor_init", s);
  }
}

void read_perm(Input& in, uint32_t perm[XHAL_MAX_RANK], uint32_t rank) {
  // Usually a permutation of 0..rank-1 (a rotation or a swap), else raw.
  const uint32_t kind = in.pick(4);
  const uint32_t r = rank >= 1 && rank <= XHAL_MAX_RANK ? rank : XHAL_MAX_RANK;
  for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) perm[k] = k;
  if (kind == 0) {
    const uint32_t shift = in.pick(r);
    for (uint32_t k = 0; k < r; ++k) perm[k] = (k + shift) % r;
  } else if (kind == 1) {
    const uint32_t a = in.pick(r), b = in.pick(r);
    perm[a] = b;
    perm[b] = a;
  } else if (kind == 2) {
    for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) perm[k] = in.pick(XHAL_MAX_RANK + 1);
  } else {
    for (uint32_t k = 0; k < XHAL_MAX_RANK; ++k) perm[k] = in.u32();
  }
}

void run_permute_view(Input& in, Pool& pool) {
  const uint32_t rank = in.pick(XHAL_MAX_RANK) + 1;
  std::vector<int64_t> dims(rank);
  for (int64_t& d : dims) d = in.range(0, 8);
  xhal_tensor_t src;
  // Shapes up to rank 8 from the input; tensor() handles initializer lists,
  // so build the want list by rank.
  switch (rank) {
    case 1:
      src = tensor(in, pool, {dims[0]});
      break;
    case 2:
      src = tensor(in, pool, {dims[0], dims[1]});
      break;
    case 3:
      src = tensor(in, pool, {dims[0], dims[1], dims[2]});
      break;
    default:
      src = tensor(in, pool, {dims[0], dims[1], dims[2], dims[3]});
      break;
  }
  uint32_t perm[XHAL_MAX_RANK];
  read_perm(in, perm, src.rank);
  xhal_tensor_t out;
  std::memset(&out, 0xA5, sizeof out);
  unsigned char before[sizeof out];
  std::memcpy(before, &out, sizeof out);
  const xhal_status_t s = XF_CALL(xhal_tensor_permute_view(&src, perm, &out));
  out_tensor_check(out, before, s, "xhal_tensor_permute_view");
  if (s == XHAL_OK) {
    if (out.rank != src.rank || out.buffer != src.buffer || out.offset != src.offset)
      broken("permute_view: rank, buffer or offset changed", "xhal_tensor_permute_view", s);
    for (uint32_t k = 0; k < out.rank; ++k)
      if (perm[k] >= out.rank || out.shape[k] != src.shape[perm[k]])
        broken("permute_view: shape[i] != src.shape[perm[i]]", "xhal_tensor_permute_view", s);
  }
}

void run_plan_create(Input& in, xhal_device_t dev, std::vector<PlanRecord>& plans) {
  const uint32_t count = in.pick(kMaxPlanCount + 1);
  uint64_t num_rows = static_cast<uint64_t>(in.range(0, 300));
  if (in.pick(4) == 0) num_rows = in.u64();  // up to 2^64: a plan costs O(count)
  const bool i32 = in.flag();
  uint32_t dtype = in.pick(8) == 0 ? in.u32() : (i32 ? XHAL_DTYPE_I32 : XHAL_DTYPE_I64);
  std::vector<int64_t> idx64(count);
  std::vector<int32_t> idx32(count);
  for (uint32_t k = 0; k < count; ++k) {
    int64_t v;
    switch (in.pick(4)) {
      case 0:
        v = in.i64();
        break;
      case 1:
        v = static_cast<int64_t>(num_rows - 1 + static_cast<uint64_t>(in.range(0, 1)));
        break;
      default: {
        const uint64_t last = num_rows ? num_rows - 1 : 0;
        v = in.range(0, last > INT64_MAX ? INT64_MAX : static_cast<int64_t>(last));
        break;
      }
    }
    idx64[k] = v;
    idx32[k] = static_cast<int32_t>(v);
  }
  xhal_index_plan_t plan = reinterpret_cast<xhal_index_plan_t>(0x1);  // must stay on failure
  // The array matches the dtype passed (a caller's duty); any dtype other
  // than i32 gets the 8-byte array, so a core reading 8 bytes stays inside.
  const void* indices =
      dtype == XHAL_DTYPE_I32 ? static_cast<const void*>(idx32.data()) : idx64.data();
  if (in.pick(16) == 0) indices = nullptr;
  const xhal_status_t s =
      XF_CALL(raw_index_plan_create(dev, indices, dtype, count, num_rows, &plan));
  if (s != XHAL_OK) {
    if (plan != reinterpret_cast<xhal_index_plan_t>(0x1))
      broken("a failed plan_create wrote out_plan", "xhal_index_plan_create", s);
    return;
  }
  plans.push_back({plan, count, static_cast<int64_t>(num_rows), false});
}

// A plan of the input's choosing, or NULL; a fresh valid one when none.
PlanRecord pick_plan(Input& in, std::vector<PlanRecord>& plans) {
  const uint32_t choice = in.pick(static_cast<uint32_t>(plans.size()) + 1);
  if (choice == plans.size()) return {nullptr, in.range(0, 8), in.range(0, 8), false};
  return plans[choice];
}

void run_op(uint32_t op, Input& in, xhal_device_t dev, Pool& pool, std::vector<PlanRecord>& plans) {
  // The device argument: the input's device, or NULL now and then.
  xhal_device_t d = in.pick(16) == 0 ? nullptr : dev;
  switch (op) {
    case 0:
      run_tensor_init(in, pool);
      break;
    case 1:
      run_permute_view(in, pool);
      break;
    case 2:
      run_plan_create(in, dev, plans);
      break;
    case 3: {
      const PlanRecord p = pick_plan(in, plans);
      const int64_t w = in.range(0, 16);
      const xhal_tensor_t src = tensor(in, pool, {p.num_rows, w});
      const xhal_tensor_t out = tensor(in, pool, {p.count, w});
      XF_OP(pool, xhal_index_select(d, p.plan, &src, &out));
      break;
    }
    case 4: {
      const PlanRecord p = pick_plan(in, plans);
      const int64_t w = in.range(0, 16);
      const float alpha = in.scalar();
      const xhal_tensor_t src = tensor(in, pool, {p.count, w});
      const xhal_tensor_t dst = tensor(in, pool, {p.num_rows, w});
      XF_OP(pool, xhal_index_add(d, p.plan, alpha, &src, &dst));
      break;
    }
    case 5: {
      const int64_t a = in.range(0, 9), b = in.range(0, 9), c = in.range(0, 9);
      const xhal_tensor_t src = tensor(in, pool, {a, b, c});
      uint32_t perm[XHAL_MAX_RANK];
      read_perm(in, perm, 3);
      const int64_t dims[3] = {a, b, c};
      const xhal_tensor_t dst =
          tensor(in, pool, {dims[perm[0] % 3], dims[perm[1] % 3], dims[perm[2] % 3]});
      XF_OP(pool, xhal_permute(d, &src, in.pick(16) == 0 ? nullptr : perm, &dst));
      break;
    }
    case 6: {
      const RowShape r = row_shape(in);
      const xhal_tensor_t x = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t y = tensor(in, pool, {r.rows, r.n});
      XF_OP(pool, xhal_softmax_forward(d, &x, &y));
      break;
    }
    case 7: {
      const RowShape r = row_shape(in);
      const xhal_tensor_t y = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dy = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dx = tensor(in, pool, {r.rows, r.n});
      XF_OP(pool, xhal_softmax_backward(d, &y, &dy, &dx));
      break;
    }
    case 8: {
      const RowShape r = row_shape(in);
      const float eps = in.scalar();
      const xhal_tensor_t x = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t gamma = tensor(in, pool, {r.n});
      const xhal_tensor_t y = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t rstd = tensor(in, pool, {r.rows});
      XF_OP(pool, xhal_rms_norm_forward(d, &x, &gamma, eps, &y, &rstd));
      break;
    }
    case 9: {
      const RowShape r = row_shape(in);
      const xhal_tensor_t x = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t gamma = tensor(in, pool, {r.n});
      const xhal_tensor_t rstd = tensor(in, pool, {r.rows});
      const xhal_tensor_t dy = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dx = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dgamma = tensor(in, pool, {r.n});
      XF_OP(pool, xhal_rms_norm_backward(d, &x, &gamma, &rstd, &dy, &dx, &dgamma));
      break;
    }
    case 10: {
      const RowShape r = row_shape(in);
      const float eps = in.scalar();
      const xhal_tensor_t x = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t gamma = tensor(in, pool, {r.n});
      const xhal_tensor_t beta = tensor(in, pool, {r.n});
      const xhal_tensor_t y = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t mean = tensor(in, pool, {r.rows});
      const xhal_tensor_t rstd = tensor(in, pool, {r.rows});
      XF_OP(pool, xhal_layer_norm_forward(d, &x, &gamma, &beta, eps, &y, &mean, &rstd));
      break;
    }
    case 12: {
      // Release a buffer or a plan early and keep its stale handle in play.
      const bool plan = in.flag();
      const uint32_t which = in.pick(64);
      if (!plan) {
        if (pool.size()) pool.release_early(which % pool.size());
      } else if (!plans.empty()) {
        PlanRecord& p = plans[which % plans.size()];
        if (!p.released) {
          XF_MUST(xhal_index_plan_release(p.plan));
          const xhal_status_t again = XF_CALL(xhal_index_plan_release(p.plan));
          if (again != XHAL_INVALID_ARGUMENT)
            broken("releasing a plan twice", "xhal_index_plan_release", again);
          p.released = true;
        }
      }
      break;
    }
    default: {
      const RowShape r = row_shape(in);
      const xhal_tensor_t x = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t gamma = tensor(in, pool, {r.n});
      const xhal_tensor_t mean = tensor(in, pool, {r.rows});
      const xhal_tensor_t rstd = tensor(in, pool, {r.rows});
      const xhal_tensor_t dy = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dx = tensor(in, pool, {r.rows, r.n});
      const xhal_tensor_t dgamma = tensor(in, pool, {r.n});
      const xhal_tensor_t dbeta = tensor(in, pool, {r.n});
      XF_OP(pool, xhal_layer_norm_backward(d, &x, &gamma, &mean, &rstd, &dy, &dx, &dgamma, &dbeta));
      break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xhal_fuzz::keep_loaded(XHAL_FUZZ_CPU_PLUGIN);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in(data, size);
  const xhal_device_t fixture = shared_cpu_device();
  xhal_device_t dev = nullptr;
  XF_MUST(xhal_device_open("cpu", &dev));
  if (dev != fixture)
    broken("reopening the device gave another handle", "xhal_device_open", XHAL_OK);
  std::vector<PlanRecord> plans;
  {
    Pool pool(dev);
    const uint32_t calls = 1 + in.pick(8);
    for (uint32_t c = 0; c < calls; ++c) {
      const uint32_t op = in.pick(kOps);
      if (verbose()) std::fprintf(stderr, "call %u: op %u\n", c, op);
      run_op(op, in, dev, pool, plans);
    }
    for (const PlanRecord& p : plans)
      if (!p.released) XF_MUST(xhal_index_plan_release(p.plan));
  }
  XF_MUST(xhal_device_release(dev));
  return 0;
}
