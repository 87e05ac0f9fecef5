// Bad input generated from the op table (hal/src/op_table.h): for every op
// and each of its tensor arguments, the same list of faults — NULL, a
// released or made-up buffer, a dtype the op does not take, a misaligned
// offset, bytes past the buffer, rank 9, a negative extent or stride, a
// non-contiguous layout, a wrong extent — and every overlap of an output
// with another argument, and every f16/bf16 dtype mix the rules refuse
// (docs/semantics.md 7.4). Each gets the status of docs/semantics.md
// section 4, a message, and leaves every output as it was. A new op gets
// these cases by having a row in the table and a valid call below.
#include <array>
#include <functional>

#include "check.h"
#include "op_table.h"

namespace xhal::conf {
namespace {

constexpr int64_t R = 4, N = 8, kTable = 10;
constexpr uint64_t kBufferBytes = 4096;  // every argument fits anywhere in any buffer

// A valid call of one op: its tensors (in the table's argument order) and
// how to make the call with them.
struct ValidCall {
  std::vector<xhal_tensor_t> tensors;
  std::function<xhal_status_t(const std::vector<const xhal_tensor_t*>&)> invoke;
};

class OpBadInputTest : public DeviceTest {
 protected:
  void TearDown() override {
    if (plan) xhal_index_plan_release(plan);
    if (matrix) xhal_csr_release(matrix);
    for (auto b : owned) xhal_buffer_release(b);
    DeviceTest::TearDown();
  }

  // One buffer per argument, kBufferBytes each: inputs random, outputs
  // poisoned; the tensor starts at byte 64.
  xhal_tensor_t arg(const ops::Arg& spec, std::vector<int64_t> shape) {
    xhal_buffer_t b = spec.role == ops::Role::kOut
                          ? poisoned_buffer(dev, kBufferBytes)
                          : upload(dev, random_floats(kBufferBytes / 4, fresh_seed(), 0.5f, 2.0f));
    owned.push_back(b);
    if (spec.role == ops::Role::kOut) outputs.push_back(b);
    return tensor(b, XHAL_DTYPE_F32, shape, 64);
  }

  // A lower-triangular 4 x 4 with a full diagonal.
  xhal_csr_t lower4() {
    const int64_t row_ptr[] = {0, 1, 3, 4, 6}, col_idx[] = {0, 0, 1, 2, 1, 3};
    const float values[] = {2, 1, 3, 4, 1, 5};
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = d.cols = R;
    d.nnz = 6;
    d.index_dtype = XHAL_DTYPE_I64;
    d.row_ptr = row_ptr;
    d.col_idx = col_idx;
    d.values = values;
    xhal_csr_t m = nullptr;
    EXPECT_EQ(xhal_csr_create(dev, &d, &m), XHAL_OK) << xhal_last_error();
    return m;
  }

  ValidCall valid_call(const ops::Op& op) {
    ValidCall c;
    auto& t = c.tensors;
    const auto& a = op.args;
    using T = const std::vector<const xhal_tensor_t*>&;
    switch (op.id) {
      case XHAL_OP_INDEX_SELECT:
        plan = make_plan(dev, {3, 0, 9, 3}, kTable);
        t = {arg(a[0], {kTable, N}), arg(a[1], {R, N})};
        c.invoke = [this](T v) { return xhal_index_select(dev, plan, v[0], v[1]); };
        break;
      case XHAL_OP_INDEX_ADD:
        plan = make_plan(dev, {3, 0, 9, 3}, kTable);
        t = {arg(a[0], {R, N}), arg(a[1], {kTable, N})};
        c.invoke = [this](T v) { return xhal_index_add(dev, plan, 1.0f, v[0], v[1]); };
        break;
      case XHAL_OP_PERMUTE:
        t = {arg(a[0], {R, N}), arg(a[1], {N, R})};
        c.invoke = [this](T v) {
          static const uint32_t perm[] = {1, 0};
          return xhal_permute(dev, v[0], perm, v[1]);
        };
        break;
      case XHAL_OP_SOFTMAX_FORWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {R, N})};
        c.invoke = [this](T v) { return xhal_softmax_forward(dev, v[0], v[1]); };
        break;
      case XHAL_OP_SOFTMAX_BACKWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {R, N}), arg(a[2], {R, N})};
        c.invoke = [this](T v) { return xhal_softmax_backward(dev, v[0], v[1], v[2]); };
        break;
      case XHAL_OP_RMS_NORM_FORWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {N}), arg(a[2], {R, N}), arg(a[3], {R})};
        c.invoke = [this](T v) {
          return xhal_rms_norm_forward(dev, v[0], v[1], 1e-5f, v[2], v[3]);
        };
        break;
      case XHAL_OP_RMS_NORM_BACKWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {N}),    arg(a[2], {R}),
             arg(a[3], {R, N}), arg(a[4], {R, N}), arg(a[5], {N})};
        c.invoke = [this](T v) {
          return xhal_rms_norm_backward(dev, v[0], v[1], v[2], v[3], v[4], v[5]);
        };
        break;
      case XHAL_OP_LAYER_NORM_FORWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {N}), arg(a[2], {N}),
             arg(a[3], {R, N}), arg(a[4], {R}), arg(a[5], {R})};
        c.invoke = [this](T v) {
          return xhal_layer_norm_forward(dev, v[0], v[1], v[2], 1e-5f, v[3], v[4], v[5]);
        };
        break;
      case XHAL_OP_LAYER_NORM_BACKWARD:
        t = {arg(a[0], {R, N}), arg(a[1], {N}),    arg(a[2], {R}), arg(a[3], {R}),
             arg(a[4], {R, N}), arg(a[5], {R, N}), arg(a[6], {N}), arg(a[7], {N})};
        c.invoke = [this](T v) {
          return xhal_layer_norm_backward(dev, v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
        };
        break;
      case XHAL_OP_SPMV:
        matrix = lower4();
        t = {arg(a[0], {R}), arg(a[1], {R})};
        c.invoke = [this](T v) {
          return xhal_spmv(dev, matrix, XHAL_TRANSPOSE_NONE, 1.0f, v[0], 0.0f, v[1]);
        };
        break;
      case XHAL_OP_SPMM:
        matrix = lower4();
        t = {arg(a[0], {R, 3}), arg(a[1], {R, 3})};
        c.invoke = [this](T v) {
          return xhal_spmm(dev, matrix, XHAL_TRANSPOSE, 1.0f, v[0], 0.0f, v[1]);
        };
        break;
      case XHAL_OP_CSR_SOLVE:
        matrix = lower4();
        t = {arg(a[0], {R, 2}), arg(a[1], {R, 2})};
        c.invoke = [this](T v) {
          return xhal_csr_solve(dev, matrix, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                XHAL_DIAGONAL_STORED, v[0], v[1]);
        };
        break;
      case XHAL_OP_CSR_SOLVE_BACKWARD:
        matrix = lower4();
        t = {arg(a[0], {R}), arg(a[1], {R}), arg(a[2], {R}), arg(a[3], {6})};
        c.invoke = [this](T v) {
          return xhal_csr_solve_backward(dev, matrix, XHAL_TRANSPOSE, XHAL_TRIANGLE_LOWER,
                                         XHAL_DIAGONAL_STORED, v[0], v[1], v[2], v[3]);
        };
        break;
      default:
        break;  // no tensor arguments (spgemm): its own test covers it
    }
    return c;
  }

  struct Fault {
    std::string what;
    xhal_status_t want;
    std::function<void(std::vector<xhal_tensor_t>&)> apply;  // breaks the call's tensors
    bool null_arg = false;
  };

  // The faults of argument i alone.
  std::vector<Fault> faults_of(const ops::Op& op, size_t i) {
    const ops::Arg& spec = op.args[i];
    const bool strided = spec.shape == ops::Shape::kAnyStrided;
    std::vector<Fault> f;
    if (!spec.optional) f.push_back({"NULL tensor", XHAL_INVALID_ARGUMENT, nullptr, true});
    f.push_back({"NULL buffer", XHAL_INVALID_ARGUMENT, [i](auto& t) { t[i].buffer = nullptr; }});
    f.push_back(
        {"released buffer", XHAL_INVALID_ARGUMENT, [this, i](auto& t) { t[i].buffer = released; }});
    f.push_back({"made-up buffer handle", XHAL_INVALID_ARGUMENT, [i](auto& t) {
                   static int local;
                   t[i].buffer = reinterpret_cast<xhal_buffer_t>(&local);
                 }});
    for (uint32_t d = XHAL_DTYPE_F32; d < XHAL_DTYPE_COUNT_; ++d) {
      if (spec.dtypes & (1u << d)) continue;
      f.push_back({std::string("dtype ") + xhal_dtype_name(static_cast<xhal_dtype_t>(d)) +
                       " the op does not take",
                   XHAL_INVALID_ARGUMENT,
                   [i, d](auto& t) { t[i].dtype = static_cast<xhal_dtype_t>(d); }});
      break;
    }
    // A dtype the op takes, but not the one its partner argument has
    // (docs/semantics.md 7.4: f64 x with f32 gamma, f32 src with f64 dst):
    // XHAL_INVALID_ARGUMENT on every backend, whether or not it implements
    // the dtype. The valid call is f32, so the partner is f32.
    for (size_t other = 0; other < op.arg_count; ++other) {
      const bool partner = spec.same_dtype_as == other || op.args[other].same_dtype_as == i;
      if (other == i || !partner) continue;
      for (uint32_t d = XHAL_DTYPE_F32 + 1; d < XHAL_DTYPE_COUNT_; ++d) {
        if (!(spec.dtypes & op.args[other].dtypes & (1u << d))) continue;
        f.push_back({std::string("dtype ") + xhal_dtype_name(static_cast<xhal_dtype_t>(d)) +
                         " where argument '" + op.args[other].name + "' is f32",
                     XHAL_INVALID_ARGUMENT,
                     [i, d](auto& t) { t[i].dtype = static_cast<xhal_dtype_t>(d); }});
      }
      break;
    }
    f.push_back({"dtype 99", XHAL_INVALID_ARGUMENT, [i](auto& t) {
                   const uint32_t bad = 99;
                   std::memcpy(&t[i].dtype, &bad, sizeof bad);
                 }});
    f.push_back({"offset not a multiple of the element size", XHAL_INVALID_ARGUMENT,
                 [i](auto& t) { t[i].offset += 2; }});
    f.push_back({"bytes past the end of the buffer", XHAL_OUT_OF_RANGE,
                 [i](auto& t) { t[i].offset = kBufferBytes - 4; }});
    f.push_back({"rank 9", XHAL_INVALID_ARGUMENT, [i](auto& t) { t[i].rank = XHAL_MAX_RANK + 1; }});
    f.push_back({"negative extent", XHAL_INVALID_ARGUMENT, [i](auto& t) { t[i].shape[0] = -1; }});
    f.push_back({"negative stride", XHAL_INVALID_ARGUMENT, [i](auto& t) {
                   for (uint32_t k = 0; k < t[i].rank; ++k) t[i].strides[k] = 1;
                   t[i].strides[0] = -1;
                 }});
    if (!strided && spec_rank(i) == 2)
      f.push_back({"column-major strides where contiguous is required", XHAL_INVALID_ARGUMENT,
                   [i](auto& t) {
                     t[i].strides[0] = 1;
                     t[i].strides[1] = t[i].shape[0];
                   }});
    f.push_back({"last extent one smaller", XHAL_SHAPE_MISMATCH,
                 [i](auto& t) { t[i].shape[t[i].rank - 1] -= 1; }});
    return f;
  }
  uint32_t spec_rank(size_t i) const { return call.tensors[i].rank; }

  // The f16/bf16 mixes (docs/semantics.md 7.4), from valid narrow calls:
  // every argument in the narrow dtype B, or gamma/beta and their
  // gradients in f32 beside B (the saved statistics f32 in both). Each
  // argument then takes every other dtype the op allows for it; a
  // combination the dtype rules of op_table.h refuse (f16 x with bf16
  // gamma, bf16 dbeta beside f32 gamma, f64 rstd for f16 x) must be
  // XHAL_INVALID_ARGUMENT on every backend, whether or not it implements B.
  std::vector<std::pair<size_t, Fault>> narrow_mixes(const ops::Op& op) {
    std::vector<std::pair<size_t, Fault>> f;
    const size_t n = op.arg_count;
    for (xhal_dtype_t b : {XHAL_DTYPE_F16, XHAL_DTYPE_BF16}) {
      if (!n || !(op.args[0].dtypes & (1u << b))) continue;
      for (bool f32_params : {false, true}) {
        std::vector<uint32_t> base(n);
        for (size_t i = 0; i < n; ++i) {
          const ops::Arg& a = op.args[i];
          if (a.same_dtype_as == ops::kNone) base[i] = b;
          else if (a.rule == ops::DtypeRule::kStat) base[i] = XHAL_DTYPE_F32;
          else if (a.rule == ops::DtypeRule::kParam && f32_params) base[i] = XHAL_DTYPE_F32;
          else base[i] = base[a.same_dtype_as];
        }
        if (f32_params && base == std::vector<uint32_t>(base.size(), b)) continue;  // no params
        auto agrees = [&op, n](const std::vector<uint32_t>& d) {
          for (size_t i = 0; i < n; ++i) {
            const ops::Arg& a = op.args[i];
            if (a.same_dtype_as != ops::kNone &&
                !ops::dtype_agrees(a.rule, d[i], d[a.same_dtype_as]))
              return false;
          }
          return true;
        };
        if (!agrees(base)) {
          ADD_FAILURE() << op.name << ": the generated narrow call is not valid";
          continue;
        }
        for (size_t i = 0; i < n; ++i)
          for (uint32_t d = XHAL_DTYPE_F32; d < XHAL_DTYPE_COUNT_; ++d) {
            if (d == base[i] || !(op.args[i].dtypes & (1u << d))) continue;
            std::vector<uint32_t> mixed = base;
            mixed[i] = d;
            if (agrees(mixed)) continue;
            std::string what =
                std::string("dtype ") + xhal_dtype_name(static_cast<xhal_dtype_t>(d)) + " in a " +
                xhal_dtype_name(b) + " call" + (f32_params ? " with f32 gamma/beta" : "");
            f.push_back({i, {what, XHAL_INVALID_ARGUMENT, [mixed](auto& t) {
                               for (size_t k = 0; k < t.size(); ++k)
                                 t[k].dtype = static_cast<xhal_dtype_t>(mixed[k]);
                             }}});
          }
      }
    }
    return f;
  }

  // Every output overlapping another argument, in the other's buffer.
  std::vector<Fault> overlaps(const ops::Op& op) {
    std::vector<Fault> f;
    for (size_t o = 0; o < op.arg_count; ++o) {
      if (op.args[o].role != ops::Role::kOut) continue;
      for (size_t j = 0; j < op.arg_count; ++j) {
        if (j == o) continue;
        const std::string pair = std::string(op.args[o].name) + " overlaps " + op.args[j].name;
        // Shifted by one element: never the identical view an in-place op allows.
        f.push_back({pair, XHAL_ALIASING, [o, j](auto& t) {
                       t[o].buffer = t[j].buffer;
                       t[o].offset = t[j].offset + 4;
                     }});
        if (j != op.args[o].in_place_with)
          f.push_back({pair + " exactly", XHAL_ALIASING, [o, j](auto& t) {
                         t[o].buffer = t[j].buffer;
                         t[o].offset = t[j].offset;
                       }});
      }
    }
    return f;
  }

  void run(const ops::Op& op) {
    record_op(op.id);
    if (!device_supports(dev, op.id))
      XHAL_CONF_UNSUPPORTED(std::string(op.name) + " is not implemented");
    call = valid_call(op);
    ASSERT_EQ(call.tensors.size(), op.arg_count) << "no valid call written for " << op.name;
    released = upload(dev, random_floats(16, fresh_seed()));
    ASSERT_EQ(xhal_buffer_release(released), XHAL_OK);
    std::vector<std::pair<size_t, Fault>> cases;
    for (size_t i = 0; i < op.arg_count; ++i)
      for (Fault& f : faults_of(op, i)) cases.push_back({i, std::move(f)});
    for (Fault& f : overlaps(op)) cases.push_back({0, std::move(f)});
    for (auto& c : narrow_mixes(op)) cases.push_back(std::move(c));
    for (auto& [i, f] : cases) {
      std::vector<xhal_tensor_t> t = call.tensors;
      if (f.apply) f.apply(t);
      std::vector<const xhal_tensor_t*> ptrs;
      for (size_t k = 0; k < t.size(); ++k) ptrs.push_back(f.null_arg && k == i ? nullptr : &t[k]);
      const xhal_status_t got = call.invoke(ptrs);
      const std::string what =
          std::string(op.name) + ", argument '" + op.args[i].name + "': " + f.what;
      EXPECT_EQ(got, f.want) << what << ": got " << xhal_status_name(got) << " ("
                             << xhal_last_error() << ")";
      if (got != XHAL_OK) {
        EXPECT_STRNE(xhal_last_error(), "") << what << ": no message";
      }
      ASSERT_EQ(xhal_device_synchronize(dev), XHAL_OK) << what << ": the device is unusable";
      for (xhal_buffer_t b : outputs) {
        ASSERT_TRUE(all_poison(download_f32(b, kBufferBytes / 4)))
            << what << ": an output was written";
      }
    }
    // The unbroken call still works afterwards.
    std::vector<const xhal_tensor_t*> ptrs;
    for (const auto& t : call.tensors) ptrs.push_back(&t);
    EXPECT_EQ(call.invoke(ptrs), XHAL_OK) << op.name << ": " << xhal_last_error();
  }

  std::vector<xhal_buffer_t> owned, outputs;
  xhal_index_plan_t plan = nullptr;
  xhal_csr_t matrix = nullptr;
  xhal_buffer_t released = nullptr;
  ValidCall call;
};

#define XHAL_OP_BAD_INPUT(Name, id) \
  TEST_P(OpBadInputTest, Name) { run(ops::kOps[id]); }
XHAL_OP_BAD_INPUT(IndexSelect, XHAL_OP_INDEX_SELECT)
XHAL_OP_BAD_INPUT(IndexAdd, XHAL_OP_INDEX_ADD)
XHAL_OP_BAD_INPUT(Permute, XHAL_OP_PERMUTE)
XHAL_OP_BAD_INPUT(SoftmaxForward, XHAL_OP_SOFTMAX_FORWARD)
XHAL_OP_BAD_INPUT(SoftmaxBackward, XHAL_OP_SOFTMAX_BACKWARD)
XHAL_OP_BAD_INPUT(RmsNormForward, XHAL_OP_RMS_NORM_FORWARD)
XHAL_OP_BAD_INPUT(RmsNormBackward, XHAL_OP_RMS_NORM_BACKWARD)
XHAL_OP_BAD_INPUT(LayerNormForward, XHAL_OP_LAYER_NORM_FORWARD)
XHAL_OP_BAD_INPUT(LayerNormBackward, XHAL_OP_LAYER_NORM_BACKWARD)
XHAL_OP_BAD_INPUT(Spmv, XHAL_OP_SPMV)
XHAL_OP_BAD_INPUT(Spmm, XHAL_OP_SPMM)
XHAL_OP_BAD_INPUT(CsrSolve, XHAL_OP_CSR_SOLVE)
XHAL_OP_BAD_INPUT(CsrSolveBackward, XHAL_OP_CSR_SOLVE_BACKWARD)
#undef XHAL_OP_BAD_INPUT

// Every op with tensor arguments has a test above.
static_assert(std::size(ops::kOps) == 14,
              "a new op needs its XHAL_OP_BAD_INPUT line and valid_call");

XHAL_CONF_INSTANTIATE(OpBadInputTest);

}  // namespace
}  // namespace xhal::conf
