// Threading stress test of the public API on the cpu plugin, meant to run
// under ThreadSanitizer (the tsan preset) but checking values in any build.
//
// What docs/abi.md promises and this test relies on:
//  - every function may be called from any thread; one device opened by
//    several threads is one handle with a shared open count;
//  - calls on one device run as if through one in-order queue, so an op
//    racing xhal_csr_set_values on the same matrix sees either the old or
//    the new values, never a mix;
//  - xhal_runtime_shutdown is XHAL_BUSY while any device is open, and a
//    later call starts the runtime again.
//
// Every result is compared bit for bit with the result of the same op run
// single-threaded first (the canonical orders make results deterministic).
//
// Phases:
//  1. reference: one thread builds everything, runs every op, keeps results;
//  2. shared: N threads open the device, build the shared plans and matrices
//     concurrently (each thread one set), then all threads run ops on all
//     sets (and on private plans/matrices they build and release), while
//     thread 0 keeps replacing the values of one matrix that the others
//     solve with; runtime shutdown attempts must say XHAL_BUSY;
//  3. churn: threads open, compute, release and shut the runtime down
//     (XHAL_OK or XHAL_BUSY) or start it again, racing each other;
//  4. the end: shutdown is retried until it succeeds.
//
// Usage: xhal-stress-test [threads [rounds]]   (defaults 8 and 40)
#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "xhal/xhal.h"

namespace {

// ---- failure reporting (thread-safe; the test never stops at the first) ---
std::atomic<int> g_failures{0};
std::atomic<int64_t> g_checked{0};
std::mutex g_print_mutex;

void report(int line, const std::string& what) {
  const int n = g_failures.fetch_add(1);
  if (n >= 12) return;  // enough to diagnose; the count is printed at the end
  std::lock_guard<std::mutex> lock(g_print_mutex);
  std::fprintf(stderr, "stress_test.cpp:%d: %s\n", line, what.c_str());
}

std::string call_failure(const char* call, xhal_status_t s) {
  return std::string(call) + " -> " + xhal_status_name(s) + ": " + xhal_last_error();
}

#define EXPECT_OK(call)                                           \
  do {                                                            \
    const xhal_status_t s_ = (call);                              \
    if (s_ != XHAL_OK) report(__LINE__, call_failure(#call, s_)); \
  } while (0)

#define EXPECT_STATUS_IN(call, a, b)                                       \
  do {                                                                     \
    const xhal_status_t s_ = (call);                                       \
    if (s_ != (a) && s_ != (b)) report(__LINE__, call_failure(#call, s_)); \
  } while (0)

// ---- the problem: fixed pseudo-random inputs ----------------------------
struct Problem {
  // index_select / index_add: a table of rows x width, count indices with
  // repeats (so index_add sums several sources into one row).
  int64_t rows = 257, width = 33, count = 300;
  std::vector<float> table, add_src, add_dst0;
  std::vector<int64_t> indices;
  float alpha = 0.75f;
  // softmax over sm_rows x sm_n: above the cpu plugin's OpenMP threshold,
  // so its worker threads run too.
  int64_t sm_rows = 48, sm_n = 200;
  std::vector<float> sm_x;
  // A lower triangular n x n CSR matrix with a full diagonal, and three
  // value sets: a and b (non-zero diagonals), zero (a zero diagonal entry,
  // which csr_solve must reject while those values are set).
  int64_t n = 160;
  std::vector<int64_t> row_ptr, col_idx;
  std::vector<float> values_a, values_b, values_zero, vec_x, rhs;
};

Problem make_problem() {
  Problem p;
  std::mt19937 rng(20240601);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto fill = [&](std::vector<float>& v, size_t size) {
    v.resize(size);
    for (float& x : v) x = u(rng);
  };
  fill(p.table, p.rows * p.width);
  fill(p.add_src, p.count * p.width);
  fill(p.add_dst0, p.rows * p.width);
  p.indices.resize(p.count);
  for (int64_t i = 0; i < p.count; ++i) p.indices[i] = static_cast<int64_t>(rng() % (p.rows / 2));
  fill(p.sm_x, p.sm_rows * p.sm_n);
  for (float& x : p.sm_x) x *= 8.0f;
  p.row_ptr.push_back(0);
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t j = 0; j < i; ++j)
      if (rng() % 6 == 0) p.col_idx.push_back(j);
    p.col_idx.push_back(i);  // the diagonal, last in the row
    p.row_ptr.push_back(static_cast<int64_t>(p.col_idx.size()));
  }
  const size_t nnz = p.col_idx.size();
  p.values_a.resize(nnz);
  p.values_b.resize(nnz);
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t k = p.row_ptr[i]; k < p.row_ptr[i + 1]; ++k) {
      const bool diag = p.col_idx[k] == i;
      p.values_a[k] = diag ? 2.0f + u(rng) * 0.5f : u(rng) * 0.3f;
      p.values_b[k] = diag ? -1.5f + u(rng) * 0.25f : u(rng) * 0.2f;
    }
  p.values_zero = p.values_a;
  p.values_zero[p.row_ptr[p.n / 2 + 1] - 1] = 0.0f;  // row n/2's diagonal
  fill(p.vec_x, p.n);
  fill(p.rhs, p.n);
  return p;
}

// ---- small API helpers --------------------------------------------------
xhal_buffer_t upload(xhal_device_t dev, const void* data, size_t bytes) {
  xhal_buffer_t b = nullptr;
  EXPECT_OK(xhal_buffer_allocate(dev, bytes, &b));
  if (b && bytes) EXPECT_OK(xhal_buffer_write(b, 0, data, bytes));
  return b;
}
template <typename T>
xhal_buffer_t upload(xhal_device_t dev, const std::vector<T>& v) {
  return upload(dev, v.data(), v.size() * sizeof(T));
}
xhal_buffer_t zeros(xhal_device_t dev, size_t floats) {
  return upload(dev, std::vector<float>(floats, 0.0f));
}
xhal_tensor_t f32(xhal_buffer_t b, std::initializer_list<int64_t> shape) {
  xhal_tensor_t t{};
  std::vector<int64_t> s(shape);
  EXPECT_OK(xhal_tensor_init(b, 0, XHAL_DTYPE_F32, static_cast<uint32_t>(s.size()), s.data(), &t));
  return t;
}
std::vector<float> download(xhal_buffer_t b, size_t floats) {
  std::vector<float> v(floats, -12345.0f);
  EXPECT_OK(xhal_buffer_read(b, 0, v.data(), floats * sizeof(float)));
  return v;
}
void release(xhal_buffer_t b) { EXPECT_OK(xhal_buffer_release(b)); }

xhal_device_t open_cpu() {
  xhal_device_t d = nullptr;
  EXPECT_OK(xhal_device_open("cpu", &d));
  return d;
}

xhal_index_plan_t make_plan(xhal_device_t dev, const Problem& p) {
  xhal_index_plan_t plan = nullptr;
  EXPECT_OK(xhal_index_plan_create(dev, p.indices.data(), XHAL_DTYPE_I64, p.indices.size(), p.rows,
                                   &plan));
  return plan;
}

xhal_csr_t make_csr(xhal_device_t dev, const Problem& p, const std::vector<float>& values) {
  xhal_csr_desc_t desc{};
  desc.struct_size = sizeof desc;
  desc.rows = desc.cols = p.n;
  desc.nnz = static_cast<int64_t>(p.col_idx.size());
  desc.index_dtype = XHAL_DTYPE_I64;
  desc.row_ptr = p.row_ptr.data();
  desc.col_idx = p.col_idx.data();
  desc.values = values.data();
  xhal_csr_t m = nullptr;
  EXPECT_OK(xhal_csr_create(dev, &desc, &m));
  return m;
}

// The inputs every op reads (device buffers shared by all threads).
struct Inputs {
  xhal_buffer_t table = nullptr, add_src = nullptr, sm_x = nullptr, vec_x = nullptr, rhs = nullptr;
  void create(xhal_device_t dev, const Problem& p) {
    table = upload(dev, p.table);
    add_src = upload(dev, p.add_src);
    sm_x = upload(dev, p.sm_x);
    vec_x = upload(dev, p.vec_x);
    rhs = upload(dev, p.rhs);
  }
  void destroy() {
    for (xhal_buffer_t b : {table, add_src, sm_x, vec_x, rhs}) release(b);
  }
};

// One set of the objects built once and used by every thread.
struct Objects {
  xhal_index_plan_t plan = nullptr;
  xhal_csr_t matrix = nullptr;  // values_a, never changed
  void create(xhal_device_t dev, const Problem& p) {
    plan = make_plan(dev, p);
    matrix = make_csr(dev, p, p.values_a);
  }
  void destroy() {
    EXPECT_OK(xhal_index_plan_release(plan));
    EXPECT_OK(xhal_csr_release(matrix));
  }
};

struct Results {
  std::vector<float> select, add, softmax, spmv, solve;
};

// Runs every op on (inputs, objects) into fresh output buffers.
Results run_ops(xhal_device_t dev, const Problem& p, const Inputs& in, const Objects& obj) {
  Results r;
  {
    xhal_buffer_t out = zeros(dev, p.count * p.width);
    const xhal_tensor_t src = f32(in.table, {p.rows, p.width});
    const xhal_tensor_t dst = f32(out, {p.count, p.width});
    EXPECT_OK(xhal_index_select(dev, obj.plan, &src, &dst));
    r.select = download(out, p.count * p.width);
    release(out);
  }
  {
    xhal_buffer_t dst_buffer = upload(dev, p.add_dst0);
    const xhal_tensor_t src = f32(in.add_src, {p.count, p.width});
    const xhal_tensor_t dst = f32(dst_buffer, {p.rows, p.width});
    EXPECT_OK(xhal_index_add(dev, obj.plan, p.alpha, &src, &dst));
    r.add = download(dst_buffer, p.rows * p.width);
    release(dst_buffer);
  }
  {
    xhal_buffer_t out = zeros(dev, p.sm_rows * p.sm_n);
    const xhal_tensor_t x = f32(in.sm_x, {p.sm_rows, p.sm_n});
    const xhal_tensor_t y = f32(out, {p.sm_rows, p.sm_n});
    EXPECT_OK(xhal_softmax_forward(dev, &x, &y));
    r.softmax = download(out, p.sm_rows * p.sm_n);
    release(out);
  }
  {
    xhal_buffer_t out = zeros(dev, p.n);
    const xhal_tensor_t x = f32(in.vec_x, {p.n});
    const xhal_tensor_t y = f32(out, {p.n});
    EXPECT_OK(xhal_spmv(dev, obj.matrix, XHAL_TRANSPOSE_NONE, 1.5f, &x, 0.0f, &y));
    r.spmv = download(out, p.n);
    release(out);
  }
  {
    xhal_buffer_t out = zeros(dev, p.n);
    const xhal_tensor_t b = f32(in.rhs, {p.n});
    const xhal_tensor_t x = f32(out, {p.n});
    EXPECT_OK(xhal_csr_solve(dev, obj.matrix, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                             XHAL_DIAGONAL_STORED, &b, &x));
    r.solve = download(out, p.n);
    release(out);
  }
  return r;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string first_difference(const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size() && i < want.size(); ++i)
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      char text[128];
      std::snprintf(text, sizeof text, "element %zu is %.9g, single-threaded %.9g", i, got[i],
                    want[i]);
      return text;
    }
  return "sizes differ";
}

void compare(int line, const char* op, const std::vector<float>& got,
             const std::vector<float>& want) {
  g_checked.fetch_add(1, std::memory_order_relaxed);
  if (!same_bits(got, want))
    report(line, std::string(op) +
                     " differs from the single-threaded result: " + first_difference(got, want));
}

void compare_all(int line, const Results& got, const Results& want) {
  compare(line, "index_select", got.select, want.select);
  compare(line, "index_add", got.add, want.add);
  compare(line, "softmax_forward", got.softmax, want.softmax);
  compare(line, "spmv", got.spmv, want.spmv);
  compare(line, "csr_solve", got.solve, want.solve);
}

// Solves with the matrix whose values another thread keeps replacing: the
// result must be the solve with values a or with values b, or
// XHAL_INVALID_STRUCTURE when the zero-diagonal set is in place.
void racing_solve(xhal_device_t dev, const Problem& p, const Inputs& in, xhal_csr_t racing,
                  const std::vector<float>& ref_a, const std::vector<float>& ref_b) {
  xhal_buffer_t out = zeros(dev, p.n);
  const xhal_tensor_t b = f32(in.rhs, {p.n});
  const xhal_tensor_t x = f32(out, {p.n});
  const xhal_status_t s = xhal_csr_solve(dev, racing, XHAL_TRANSPOSE_NONE, XHAL_TRIANGLE_LOWER,
                                         XHAL_DIAGONAL_STORED, &b, &x);
  g_checked.fetch_add(1, std::memory_order_relaxed);
  if (s == XHAL_OK) {
    const std::vector<float> got = download(out, p.n);
    if (!same_bits(got, ref_a) && !same_bits(got, ref_b))
      report(__LINE__,
             "csr_solve racing csr_set_values gave neither the values-a nor the "
             "values-b result: " +
                 first_difference(got, ref_a) + " (vs a)");
  } else if (s != XHAL_INVALID_STRUCTURE) {
    report(__LINE__, call_failure("racing xhal_csr_solve", s));
  }
  release(out);
}

struct Config {
  int threads = 8;
  int rounds = 40;
};

xhal_runtime_options_t options() {
  xhal_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.device_selector = "cpu";
  o.plugin_path = XHAL_STRESS_CPU_PLUGIN;
  o.plugin_path_only = 1;
  return o;
}

// ---- phase 2 -------------------------------------------------------------
void shared_phase(const Config& cfg, const Problem& p, const Results& ref,
                  const std::vector<float>& ref_solve_b) {
  // The main thread keeps the device open (and owns the inputs and the
  // racing matrix) for the whole phase, so every shutdown attempt is BUSY.
  xhal_device_t main_dev = open_cpu();
  Inputs in;
  in.create(main_dev, p);
  xhal_csr_t racing = make_csr(main_dev, p, p.values_a);

  const int sets = std::min(cfg.threads, 4);
  std::vector<Objects> shared(sets);
  std::barrier sync(cfg.threads);
  std::atomic<int> solvers_left{cfg.threads - 1};
  std::vector<std::thread> pool;
  for (int t = 0; t < cfg.threads; ++t)
    pool.emplace_back([&, t] {
      xhal_device_t dev = open_cpu();
      if (dev != main_dev) report(__LINE__, "opening the open device gave another handle");
      if (t < sets) shared[t].create(dev, p);  // built concurrently
      sync.arrive_and_wait();
      if (t == 0) {
        // Replaces the racing matrix's values while the others solve.
        const std::vector<float>* sets_of_values[] = {&p.values_b, &p.values_zero, &p.values_a};
        for (int i = 0; solvers_left.load() > 0 && i < 100000; ++i)
          EXPECT_OK(xhal_csr_set_values(racing, sets_of_values[i % 3]->data()));
      } else {
        for (int round = 0; round < cfg.rounds; ++round) {
          compare_all(__LINE__, run_ops(dev, p, in, shared[(t + round) % sets]), ref);
          racing_solve(dev, p, in, racing, ref.solve, ref_solve_b);
          if (round % 3 == 0) {
            // Private objects built and released while others compute, and
            // a second open of the same device (count > 1).
            xhal_device_t again = open_cpu();
            Objects mine;
            mine.create(again, p);
            compare_all(__LINE__, run_ops(again, p, in, mine), ref);
            mine.destroy();
            EXPECT_OK(xhal_device_release(again));
          }
          if (round % 4 == 1) {
            const xhal_status_t s = xhal_runtime_shutdown();
            if (s != XHAL_BUSY)
              report(__LINE__, call_failure("xhal_runtime_shutdown with devices open", s));
          }
        }
        solvers_left.fetch_sub(1);
      }
      sync.arrive_and_wait();
      if (t < sets) shared[t].destroy();
      EXPECT_OK(xhal_device_release(dev));
    });
  for (std::thread& th : pool) th.join();

  EXPECT_OK(xhal_csr_release(racing));
  in.destroy();
  EXPECT_OK(xhal_device_release(main_dev));
}

// ---- phase 3 -------------------------------------------------------------
// No thread holds the device for long: shutdowns succeed now and then, and
// the next call starts the runtime again (from XHAL_DEVICE and
// XHAL_PLUGIN_PATH, set by main, or from xhal_runtime_init).
std::atomic<int> g_shutdowns{0}, g_inits{0};

void churn_phase(const Config& cfg, const Problem& p, const Results& ref) {
  std::vector<std::thread> pool;
  for (int t = 0; t < cfg.threads; ++t)
    pool.emplace_back([&, t] {
      for (int round = 0; round < cfg.rounds; ++round) {
        if ((t + round) % 5 == 0) {
          const xhal_runtime_options_t o = options();
          const xhal_status_t s = xhal_runtime_init(&o);
          if (s == XHAL_OK) g_inits.fetch_add(1);
          else if (s != XHAL_BUSY) report(__LINE__, call_failure("xhal_runtime_init", s));
        }
        xhal_device_t dev = open_cpu();
        if (!dev) continue;
        xhal_buffer_t x_buffer = upload(dev, p.sm_x);
        xhal_buffer_t y_buffer = zeros(dev, p.sm_rows * p.sm_n);
        const xhal_tensor_t x = f32(x_buffer, {p.sm_rows, p.sm_n});
        const xhal_tensor_t y = f32(y_buffer, {p.sm_rows, p.sm_n});
        EXPECT_OK(xhal_softmax_forward(dev, &x, &y));
        compare(__LINE__, "softmax_forward (churn)", download(y_buffer, p.sm_rows * p.sm_n),
                ref.softmax);
        release(x_buffer);
        release(y_buffer);
        // BUSY while the device is open: this thread still holds it.
        const xhal_status_t busy = xhal_runtime_shutdown();
        if (busy != XHAL_BUSY) report(__LINE__, call_failure("shutdown, device held", busy));
        EXPECT_OK(xhal_device_release(dev));
        const xhal_status_t s = xhal_runtime_shutdown();
        if (s == XHAL_OK) g_shutdowns.fetch_add(1);
        else if (s != XHAL_BUSY) report(__LINE__, call_failure("xhal_runtime_shutdown", s));
      }
    });
  for (std::thread& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  Config cfg;
  if (argc > 1) cfg.threads = std::max(2, std::atoi(argv[1]));
  if (argc > 2) cfg.rounds = std::max(1, std::atoi(argv[2]));
  // Lazy restarts in phase 3 read the environment: the same plugin only.
  setenv("XHAL_DEVICE", "cpu", 1);
  setenv("XHAL_PLUGIN_PATH", XHAL_STRESS_CPU_PLUGIN, 1);
  const auto start = std::chrono::steady_clock::now();

  const xhal_runtime_options_t o = options();
  EXPECT_OK(xhal_runtime_init(&o));
  const Problem p = make_problem();

  // Phase 1: the single-threaded results.
  Results ref;
  std::vector<float> ref_solve_b;
  {
    xhal_device_t dev = open_cpu();
    if (!dev) {
      std::fprintf(stderr, "cannot open the cpu device: %s\n", xhal_last_error());
      return 2;
    }
    Inputs in;
    in.create(dev, p);
    Objects obj;
    obj.create(dev, p);
    ref = run_ops(dev, p, in, obj);
    // The same ops again must repeat themselves (else nothing below can
    // be compared bit for bit).
    compare_all(__LINE__, run_ops(dev, p, in, obj), ref);
    Objects with_b;
    with_b.plan = make_plan(dev, p);
    with_b.matrix = make_csr(dev, p, p.values_b);
    ref_solve_b = run_ops(dev, p, in, with_b).solve;
    if (same_bits(ref_solve_b, ref.solve)) report(__LINE__, "values a and b solve alike");
    // The zero-diagonal values are rejected by csr_solve.
    EXPECT_OK(xhal_csr_set_values(with_b.matrix, p.values_zero.data()));
    {
      xhal_buffer_t out = zeros(dev, p.n);
      const xhal_tensor_t b = f32(in.rhs, {p.n});
      const xhal_tensor_t x = f32(out, {p.n});
      const xhal_status_t s = xhal_csr_solve(dev, with_b.matrix, XHAL_TRANSPOSE_NONE,
                                             XHAL_TRIANGLE_LOWER, XHAL_DIAGONAL_STORED, &b, &x);
      if (s != XHAL_INVALID_STRUCTURE)
        report(__LINE__, call_failure("csr_solve with a zero diagonal", s));
      release(out);
    }
    with_b.destroy();
    obj.destroy();
    in.destroy();
    EXPECT_OK(xhal_device_release(dev));
  }
  if (g_failures.load() != 0) {
    std::fprintf(stderr, "the single-threaded phase failed; not starting threads\n");
    return 1;
  }

  shared_phase(cfg, p, ref, ref_solve_b);
  churn_phase(cfg, p, ref);

  // Phase 4: every device is released now; shutdown must get through.
  int attempts = 0;
  xhal_status_t s = XHAL_BUSY;
  while ((s = xhal_runtime_shutdown()) == XHAL_BUSY && attempts++ < 1000)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (s != XHAL_OK) report(__LINE__, call_failure("final xhal_runtime_shutdown", s));

  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("stress: %d threads x %d rounds, %" PRId64
              " results compared, %d shutdowns and %d starts during the churn, %d failures, "
              "%.1f s\n",
              cfg.threads, cfg.rounds, g_checked.load(), g_shutdowns.load(), g_inits.load(),
              g_failures.load(), seconds);
  return g_failures.load() == 0 ? 0 : 1;
}
