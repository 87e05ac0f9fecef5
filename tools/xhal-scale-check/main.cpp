// xhal-scale-check: ops on tensors of more than 2^31 elements, on a device
// and on the cpu device in one process, compared byte for byte
// (docs/performance.md, "Scale"). Every element offset past 2^31 must be
// computed in 64 bits for the bytes to match.
//
//   xhal-scale-check --device cuda:0 [--rows R] [--width W] [--count N]
//                    [--matrix-nnz NNZ [--matrix-rows M] [--matrix-from-buffers]]
//                    [--skip-dense]
//
// Steps (each a line "step: PASS|FAIL ..."; exit status 1 on any FAIL):
//   index_select  out[N, W] = src[idx, :], src [R, W]; indices include the
//                 last rows, so source offsets pass 2^31.
//   index_add     dst[R, W] (a copy of src) += 0.5 * out[i, :] at random rows
//                 and 16 hub rows (sums of thousands of terms).
//   spmm          Y[R, W] = A X, X = src: a few entries per row plus rows of
//                 5,000 entries (several of spmm's 1,024-entry pieces).
// The defaults (R = 2^21 + 17, W = 1024, N = 2^21 + 5) make every tensor
// above 8 GiB; the cpu device holds the same, so the host needs about 40 GiB.
// --skip-dense leaves these three out (the cpu device is then not opened).
//
// With --matrix-nnz NNZ (0, the default: skipped) a matrix of NNZ entries,
// meant to be more than 2^31 (e.g. 2^31 + 2^24 = 2,164,260,864) so that
// row_ptr needs 64 bits:
//   matrix        M x M (M = --matrix-rows, default 2^24), f32 values, i64
//                 row_ptr and col_idx, created on the device alone. Rows of
//                 0-32 entries (one sequential chunk), 33-1,024 (one piece)
//                 and a few of 1,025 to 200,000 (several pieces and their
//                 tree); columns strictly increasing and spread over [0, M),
//                 columns 0 and M - 1 each in about one row in 16 (hub
//                 columns of about M / 16 entries); values with +0, -0 and
//                 magnitudes 2^-8 to 2^7. The row lengths are scaled so the
//                 total is exactly NNZ (the last rows take the remainder).
//   matrix spmv A      y = A x (alpha 1, beta 0)
//   matrix spmv A^T    y = A^T x
//   matrix spmm A X    Y = A X, X [M, 8]
// Each op is compared bit for bit with the canonical sums (docs/semantics.md
// 3.7, "Sparse (CSR)"; xhal_canonical.h) computed here on about 20,000
// sampled rows of A (row 0, the last rows, every row over 1,024 entries,
// the rows holding entries 2^31 - 1, 2^31, 2^32 - 1, 2^32, the rest spread)
// and as many columns for A^T (0, M - 1, columns of the long rows' entries
// and of those boundary entries, the rest spread). The pattern and values are
// made from splitmix64 and made again for the reference, so the host keeps
// only row_ptr once the matrix exists.
// Memory: the host holds col_idx and values (12 bytes an entry) while
// Csr::create runs, and the core keeps four int64 arrays of NNZ (col_idx,
// row_idx, the transpose's rows and permutation: 32 bytes an entry) for the
// matrix's life: roughly 5 x 8 x NNZ bytes (about 95 GB at 2^31 + 2^24)
// during creation, plus the transpose's scratch of 8 x threads x M bytes
// (2 GiB at 16 threads), and 4 x 8 x NNZ after it. The device holds roughly
// 6 x 4 x NNZ bytes (about 52 GB), plus x, y, X and Y (72 bytes a row).
// The cpu device would hold a second copy of the pattern, so the matrix is
// not made there for comparison.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "xhal/xhal.hpp"
#include "xhal/xhal_canonical.h"

namespace {

// splitmix64: the same inputs on every machine.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
float value_at(uint64_t i) { return static_cast<float>(mix(i) >> 40) * 0x1p-23f - 1.0f; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One tensor's buffer on both devices.
struct Pair {
  xhal::Buffer dev, ref;
};

Pair allocate(const xhal::Device& d, const xhal::Device& r, uint64_t bytes) {
  return {xhal::Buffer::allocate(d, bytes), xhal::Buffer::allocate(r, bytes)};
}

// Reads both buffers in slices and counts the 4-byte elements that differ.
bool compare(const char* step, const Pair& p, uint64_t elements,
             std::chrono::steady_clock::time_point t0) {
  constexpr uint64_t kSlice = uint64_t{1} << 26;  // elements per read
  std::vector<uint32_t> a(kSlice), b(kSlice);
  uint64_t differ = 0, first = 0;
  for (uint64_t at = 0; at < elements; at += kSlice) {
    const uint64_t n = std::min(kSlice, elements - at);
    p.dev.read(a.data(), n * 4, at * 4);
    p.ref.read(b.data(), n * 4, at * 4);
    for (uint64_t i = 0; i < n; ++i)
      if (a[i] != b[i] && differ++ == 0) first = at + i;
  }
  if (differ)
    std::printf(
        "%s: FAIL %llu of %llu elements differ from the cpu device, first at %llu (%.1f s)\n", step,
        static_cast<unsigned long long>(differ), static_cast<unsigned long long>(elements),
        static_cast<unsigned long long>(first), seconds_since(t0));
  else
    std::printf("%s: PASS %llu elements bit-identical to the cpu device (%.1f s)\n", step,
                static_cast<unsigned long long>(elements), seconds_since(t0));
  std::fflush(stdout);
  return differ == 0;
}

// ---- the matrix of more than 2^31 entries -----------------------------------

constexpr uint64_t kRowSeed = uint64_t{1} << 52;   // row lengths
constexpr uint64_t kHubSeed = uint64_t{2} << 52;   // rows with an entry in column 0 / M - 1
constexpr uint64_t kColSeed = uint64_t{3} << 52;   // columns, by entry index
constexpr uint64_t kValSeed = uint64_t{4} << 52;   // values, by entry index
constexpr uint64_t kXSeed = uint64_t{5} << 52;     // x of spmv
constexpr uint64_t kXmSeed = uint64_t{6} << 52;    // X of spmm
constexpr uint64_t kPickSeed = uint64_t{7} << 52;  // sampled rows and columns
constexpr int64_t kLongestRow = 200000;
constexpr int64_t kPiece = 1024;     // entries of one piece (longer rows: several)
constexpr int64_t kSamples = 20000;  // spread rows / columns sampled (plus the chosen ones)
constexpr int64_t kK = 8;            // columns of X in spmm

// floor(h * n / 2^64) for n < 2^32: a value in [0, n).
int64_t below(uint64_t h, int64_t n) {
  return static_cast<int64_t>(((h >> 32) * static_cast<uint64_t>(n)) >> 32);
}

// value_at(e + seed), one in 64 +0, one in 64 -0, scaled by 2^-8 .. 2^7.
float entry_value(uint64_t e, uint64_t seed) {
  const uint64_t h = mix(e + seed);
  if ((h & 63) == 0) return 0.0f;
  if ((h & 63) == 1) return -0.0f;
  static constexpr float kScale[16] = {0x1p-8f, 0x1p-7f, 0x1p-6f, 0x1p-5f, 0x1p-4f, 0x1p-3f,
                                       0x1p-2f, 0x1p-1f, 0x1p0f,  0x1p1f,  0x1p2f,  0x1p3f,
                                       0x1p4f,  0x1p5f,  0x1p6f,  0x1p7f};
  return value_at(e + seed) * kScale[(h >> 6) & 15];
}

// The columns of row i (length len): its entry t (entry index e) lies in
// [t * stride, (t + 1) * stride) with stride = floor(M / len), so they are
// strictly increasing; a hub row's first entry is column 0, its last M - 1.
struct RowColumns {
  int64_t m, len, stride;
  bool hub_first, hub_last;
  RowColumns(int64_t m_, int64_t i, int64_t len_) : m(m_), len(len_) {
    stride = len > 0 ? m / len : 1;
    const uint64_t h = mix(static_cast<uint64_t>(i) + kHubSeed);
    hub_first = (h & 15) == 0;
    hub_last = ((h >> 4) & 15) == 0;
  }
  int64_t operator()(int64_t t, int64_t e) const {
    if (t == 0 && hub_first) return 0;
    if (t == len - 1 && hub_last) return m - 1;
    return t * stride + below(mix(static_cast<uint64_t>(e) + kColSeed), stride);
  }
};

unsigned thread_count() { return std::max(1u, std::thread::hardware_concurrency()); }

// f(i0, i1, part) over the rows cut into `parts` ranges of about equal entry
// counts, one thread each; the ranges follow row order.
template <class F>
void for_row_ranges(const std::vector<int64_t>& rp, unsigned parts, F f) {
  const int64_t rows = static_cast<int64_t>(rp.size()) - 1, nnz = rp.back();
  std::vector<int64_t> first(parts + 1, rows);
  first[0] = 0;
  for (unsigned t = 1; t < parts; ++t) {
    const int64_t target = nnz / parts * t;
    first[t] = std::upper_bound(rp.begin(), rp.end(), target) - rp.begin() - 1;
    first[t] = std::clamp(first[t], first[t - 1], rows);
  }
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < parts; ++t)
    threads.emplace_back([&f, &first, t] { f(first[t], first[t + 1], t); });
  for (auto& th : threads) th.join();
}

// f(b, e) over [0, n) cut into `parts` equal ranges, one thread each.
template <class F>
void for_ranges(int64_t n, unsigned parts, F f) {
  std::vector<std::thread> threads;
  for (unsigned t = 0; t < parts; ++t)
    threads.emplace_back(
        [&f, n, parts, t] { f(n / parts * t, t + 1 == parts ? n : n / parts * (t + 1)); });
  for (auto& th : threads) th.join();
}

// Row lengths: `long_rows` of 1,025 .. min(200,000, m / 2) entries spread
// over the rows, the others 0-32 or 33-1,024 entries in the proportion that
// makes the expected total nnz; the last rows are then lengthened or
// shortened (within 1 .. 1,024) so that the total is exactly nnz.
std::vector<int64_t> make_row_ptr(int64_t m, int64_t nnz, std::vector<int64_t>* long_rows) {
  const int64_t lmax = std::min<int64_t>(kLongestRow, m / 2);
  auto long_len = [&](int64_t k) {
    return k == 0   ? lmax
           : k == 1 ? kPiece + 1
                    : kPiece + 1 + below(mix(static_cast<uint64_t>(k) + kRowSeed), lmax - kPiece);
  };
  int64_t n_long = std::clamp<int64_t>(nnz / (8 * ((kPiece + 1 + lmax) / 2)), 2, 64), long_total;
  for (;; --n_long) {
    long_total = 0;
    for (int64_t k = 0; k < n_long; ++k) long_total += long_len(k);
    if (n_long == 0 || long_total <= nnz / 2) break;
  }
  std::vector<int64_t> rp(static_cast<size_t>(m) + 1, 0);  // rp[i + 1]: row i's length for now
  std::vector<char> is_long(static_cast<size_t>(m), 0);
  long_rows->clear();
  for (int64_t k = 0; k < n_long; ++k) {
    const int64_t i = (2 * k + 1) * m / (2 * n_long);
    long_rows->push_back(i);
    is_long[i] = 1;
    rp[i + 1] = long_len(k);
  }
  // Short rows: one in 1,000 empty, else 1-32 (mean 16.5 * 0.999); medium
  // rows 33-1,024 (mean 528.5).
  const double short_mean = 16.5 * 0.999, medium_mean = 528.5;
  const double rest_mean = double(nnz - long_total) / double(m - n_long);
  const double p = std::clamp((rest_mean - short_mean) / (medium_mean - short_mean), 0.0, 1.0);
  const uint64_t p_bits = static_cast<uint64_t>(std::ldexp(p, 53));
  int64_t total = long_total;
  for (int64_t i = 0; i < m; ++i) {
    if (is_long[i]) continue;
    const uint64_t h1 = mix(static_cast<uint64_t>(i) + kRowSeed), h2 = mix(h1);
    const int64_t len = (h1 >> 11) < p_bits ? 33 + static_cast<int64_t>(h2 % 992)
                        : h2 % 1000 == 0    ? 0
                                            : 1 + static_cast<int64_t>((h2 >> 16) % 32);
    rp[i + 1] = len;
    total += len;
  }
  int64_t diff = nnz - total;
  for (int64_t i = m - 1; i >= 0 && diff != 0; --i) {
    if (is_long[i]) continue;
    const int64_t len = rp[i + 1];
    const int64_t now = diff > 0 ? std::min<int64_t>(len + diff, kPiece)
                                 : std::max<int64_t>(len + diff, std::min<int64_t>(len, 1));
    rp[i + 1] = now;
    diff -= now - len;
  }
  if (diff != 0)
    throw std::runtime_error("--matrix-nnz " + std::to_string(nnz) + " cannot be spread over " +
                             std::to_string(m) +
                             " rows (--matrix-rows) of 1 to 1,024 entries and a few long rows");
  for (int64_t i = 0; i < m; ++i) rp[i + 1] += rp[i];
  return rp;
}

// Counts a step's sampled elements and keeps the first that differs.
struct Tally {
  uint64_t checked = 0, differ = 0;
  std::string first;
  template <class Where>
  void check(float device, float reference, Where where) {
    uint32_t d, r;
    std::memcpy(&d, &device, 4);
    std::memcpy(&r, &reference, 4);
    ++checked;
    if (d != r && differ++ == 0) {
      char bits[96];
      std::snprintf(bits, sizeof bits, ": device 0x%08x (%.9g), reference 0x%08x (%.9g)", d,
                    static_cast<double>(device), r, static_cast<double>(reference));
      first = where() + bits;
    }
  }
  bool report(const char* step, const char* what, double op_s,
              std::chrono::steady_clock::time_point t0) const {
    if (differ)
      std::printf(
          "%s: FAIL %llu of %llu sampled %s differ from the canonical sums, first %s "
          "(op %.2f s; %.1f s)\n",
          step, static_cast<unsigned long long>(differ), static_cast<unsigned long long>(checked),
          what, first.c_str(), op_s, seconds_since(t0));
    else
      std::printf(
          "%s: PASS %llu sampled %s bit-identical to the canonical sums (op %.2f s; %.1f s)\n",
          step, static_cast<unsigned long long>(checked), what, op_s, seconds_since(t0));
    std::fflush(stdout);
    return differ == 0 && checked > 0;
  }
};

// y = alpha * s with alpha = 1 and beta = 0 (docs/semantics.md, spmv): the
// canonical segsum s of the terms, multiplied by 1.
float canonical(const std::vector<float>& terms) {
  return 1.0f * xhal_canon_segsum(terms.data(), terms.size(), 1);
}

bool matrix_step(const xhal::Device& dev, int64_t m, int64_t nnz, bool from_buffers,
                 std::chrono::steady_clock::time_point t0) {
  const unsigned threads = thread_count();
  std::vector<int64_t> long_rows;
  const std::vector<int64_t> rp = make_row_ptr(m, nnz, &long_rows);
  auto len_of = [&](int64_t i) { return rp[i + 1] - rp[i]; };
  int64_t shorts = 0, mediums = 0, longest = 0;
  for (int64_t i = 0; i < m; ++i) {
    shorts += len_of(i) <= 32;
    mediums += len_of(i) > 32 && len_of(i) <= kPiece;
    longest = std::max(longest, len_of(i));
  }
  const int64_t over = nnz - (int64_t{1} << 31);
  std::printf(
      "matrix: %lld x %lld, nnz %lld (%s%lld), f32 values, i64 indices; rows of <= 32 "
      "entries %lld, of 33-1024 %lld, of > 1024 %zu (longest %lld); %u threads\n",
      static_cast<long long>(m), static_cast<long long>(m), static_cast<long long>(nnz),
      over > 0 ? "2^31 + " : "2^31 - ", static_cast<long long>(over > 0 ? over : -over),
      static_cast<long long>(shorts), static_cast<long long>(mediums), long_rows.size(),
      static_cast<long long>(longest), threads);
  std::printf(
      "matrix: host about %.1f GiB while Csr::create runs (12 B an entry here, 32 in the "
      "core), %.1f GiB after; device about %.1f GiB (24 B an entry)\n",
      44.0 * double(nnz) / 0x1p30, 32.0 * double(nnz) / 0x1p30, 24.0 * double(nnz) / 0x1p30);
  std::fflush(stdout);

  xhal::Csr a;
  {
    auto t1 = std::chrono::steady_clock::now();
    // Uninitialised: the threads that fill them touch their pages first.
    std::unique_ptr<int64_t[]> col(new int64_t[static_cast<size_t>(nnz)]);
    std::unique_ptr<float[]> val(new float[static_cast<size_t>(nnz)]);
    for_row_ranges(rp, threads, [&](int64_t i0, int64_t i1, unsigned) {
      for (int64_t i = i0; i < i1; ++i) {
        const RowColumns cols(m, i, len_of(i));
        for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
          col[e] = cols(e - rp[i], e);
          val[e] = entry_value(static_cast<uint64_t>(e), kValSeed);
        }
      }
    });
    std::printf("matrix: host arrays filled in %.1f s (%.1f s)\n", seconds_since(t1),
                seconds_since(t0));
    std::fflush(stdout);
    xhal_csr_desc_t d{};
    d.struct_size = sizeof d;
    d.rows = m;
    d.cols = m;
    d.nnz = nnz;
    d.index_dtype = XHAL_DTYPE_I64;
    d.row_ptr = rp.data();
    d.col_idx = col.get();
    d.values = val.get();
    d.values_dtype = XHAL_DTYPE_F32;
    // --matrix-from-buffers: the arrays go to device buffers first, and the
    // matrix is made from those (the pattern validated on the device where
    // the backend can).
    xhal::Buffer brp, bcol, bval;
    if (from_buffers) {
      t1 = std::chrono::steady_clock::now();
      brp = xhal::Buffer::upload(dev, rp);
      bcol = xhal::Buffer::allocate(dev, static_cast<uint64_t>(nnz) * 8);
      bcol.write(col.get(), static_cast<uint64_t>(nnz) * 8);
      bval = xhal::Buffer::allocate(dev, static_cast<uint64_t>(nnz) * 4);
      bval.write(val.get(), static_cast<uint64_t>(nnz) * 4);
      d.row_ptr = d.col_idx = nullptr;
      d.values = nullptr;
      d.row_ptr_buffer = brp.get();
      d.col_idx_buffer = bcol.get();
      d.values_buffer = bval.get();
      std::printf("matrix: uploaded to device buffers in %.1f s (%.1f s)\n", seconds_since(t1),
                  seconds_since(t0));
    }
    t1 = std::chrono::steady_clock::now();
    a = xhal::Csr::create(dev, d);
    std::printf("matrix: Csr::create%s %.1f s (%.1f s)\n",
                from_buffers ? " from device buffers" : "", seconds_since(t1), seconds_since(t0));
    std::fflush(stdout);
  }  // the host arrays go: the core copied the pattern, the device the values

  // x [m] and X [m, 8] with +0 and -0 among them.
  std::vector<float> x(static_cast<size_t>(m)), xm(static_cast<size_t>(m * kK));
  for_ranges(m, threads, [&](int64_t b, int64_t e) {
    for (int64_t j = b; j < e; ++j) {
      x[j] = entry_value(static_cast<uint64_t>(j), kXSeed);
      for (int64_t c = 0; c < kK; ++c)
        xm[j * kK + c] = entry_value(static_cast<uint64_t>(j * kK + c), kXmSeed);
    }
  });
  xhal::Buffer xb = xhal::Buffer::upload(dev, x), yb = xhal::Buffer::allocate(dev, m * 4);
  xhal::Buffer xmb = xhal::Buffer::upload(dev, xm), ymb = xhal::Buffer::allocate(dev, m * kK * 4);

  // The sampled rows and columns.
  auto row_of_entry = [&](int64_t e) {
    return static_cast<int64_t>(std::upper_bound(rp.begin(), rp.end(), e) - rp.begin()) - 1;
  };
  auto column_of_entry = [&](int64_t e) {
    const int64_t i = row_of_entry(e);
    return RowColumns(m, i, len_of(i))(e - rp[i], e);
  };
  std::vector<int64_t> rows{0, m - 1}, cols{0, m - 1};
  for (int64_t k = 1; k <= 16; ++k) rows.push_back(m - 1 - k);  // the adjusted rows
  for (int64_t i : long_rows) {
    rows.push_back(i);
    for (int64_t k = 0; k < 16; ++k)
      cols.push_back(column_of_entry(rp[i] + k * (len_of(i) - 1) / 15));
  }
  for (int64_t b :
       {(int64_t{1} << 31) - 1, int64_t{1} << 31, (int64_t{1} << 32) - 1, int64_t{1} << 32})
    if (b < nnz) {
      rows.push_back(row_of_entry(b));
      cols.push_back(column_of_entry(b));
    }
  for (int64_t k = 0; k < kSamples; ++k) {
    const int64_t lo = k * m / kSamples, hi = (k + 1) * m / kSamples;
    if (hi <= lo) continue;
    rows.push_back(lo + below(mix(static_cast<uint64_t>(k) + kPickSeed), hi - lo));
    cols.push_back(lo + below(mix(static_cast<uint64_t>(k) + kPickSeed + 1), hi - lo));
  }
  for (auto* v : {&rows, &cols}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  bool ok = true;
  std::vector<float> terms;
  auto op_time = [&](auto&& op) {
    const auto t1 = std::chrono::steady_clock::now();
    op();
    dev.synchronize();
    return seconds_since(t1);
  };

  // y = A x. y starts as all-ones bits (NaN): beta = 0 must not read it.
  {
    yb.fill(uint32_t{0xffffffffu});
    const double op_s = op_time([&] {
      xhal::spmv(dev, a, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(xb, {m}), 0.0f,
                 xhal::tensor<float>(yb, {m}));
    });
    const std::vector<float> y = yb.read<float>(static_cast<size_t>(m));
    Tally tally;
    for (int64_t i : rows) {
      const RowColumns rc(m, i, len_of(i));
      terms.clear();
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e)
        terms.push_back(entry_value(static_cast<uint64_t>(e), kValSeed) * x[rc(e - rp[i], e)]);
      tally.check(y[i], canonical(terms), [&] {
        return "y[" + std::to_string(i) + "] (a row of " + std::to_string(len_of(i)) + " entries)";
      });
    }
    ok = tally.report("matrix spmv A", "rows", op_s, t0) && ok;
  }

  // y = A^T x: column j's terms A[i, j] * x[i] in ascending i, gathered in
  // one pass over every entry (each thread its row range, then in row order).
  {
    yb.fill(uint32_t{0xffffffffu});
    const double op_s = op_time([&] {
      xhal::spmv(dev, a, XHAL_TRANSPOSE, 1.0f, xhal::tensor<float>(xb, {m}), 0.0f,
                 xhal::tensor<float>(yb, {m}));
    });
    const std::vector<float> y = yb.read<float>(static_cast<size_t>(m));
    const auto t1 = std::chrono::steady_clock::now();
    std::vector<uint8_t> sampled(static_cast<size_t>(m), 0);
    for (int64_t j : cols) sampled[j] = 1;
    struct Term {
      int64_t col;
      float term;
    };
    std::vector<std::vector<Term>> found(threads);
    for_row_ranges(rp, threads, [&](int64_t i0, int64_t i1, unsigned part) {
      for (int64_t i = i0; i < i1; ++i) {
        const RowColumns rc(m, i, len_of(i));
        for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
          const int64_t j = rc(e - rp[i], e);
          if (sampled[j])
            found[part].push_back({j, entry_value(static_cast<uint64_t>(e), kValSeed) * x[i]});
        }
      }
    });
    // Grouped by column, each column's terms kept in row order.
    std::vector<int64_t> start(cols.size() + 1, 0);
    auto slot = [&](int64_t j) {
      return std::lower_bound(cols.begin(), cols.end(), j) - cols.begin();
    };
    for (const auto& f : found)
      for (const Term& t : f) ++start[slot(t.col) + 1];
    for (size_t k = 0; k < cols.size(); ++k) start[k + 1] += start[k];
    std::vector<float> column_terms(static_cast<size_t>(start.back()));
    {
      std::vector<int64_t> next(start.begin(), start.end() - 1);
      for (auto& f : found) {
        for (const Term& t : f) column_terms[next[slot(t.col)]++] = t.term;
        f = {};
      }
    }
    Tally tally;
    int64_t longest_column = 0;
    for (size_t k = 0; k < cols.size(); ++k) {
      const int64_t count = start[k + 1] - start[k];
      longest_column = std::max(longest_column, count);
      terms.assign(column_terms.begin() + start[k], column_terms.begin() + start[k + 1]);
      tally.check(y[cols[k]], canonical(terms), [&] {
        return "y[" + std::to_string(cols[k]) + "] (a column of " + std::to_string(count) +
               " entries)";
      });
    }
    std::printf(
        "matrix: A^T reference: one pass over the entries, %lld terms of %zu columns "
        "(longest %lld) in %.1f s\n",
        static_cast<long long>(start.back()), cols.size(), static_cast<long long>(longest_column),
        seconds_since(t1));
    ok = tally.report("matrix spmv A^T", "columns", op_s, t0) && ok;
  }

  // Y = A X, X [m, 8]: per column of X as spmv; only the sampled rows of Y
  // are read.
  {
    ymb.fill(uint32_t{0xffffffffu});
    const double op_s = op_time([&] {
      xhal::spmm(dev, a, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(xmb, {m, kK}), 0.0f,
                 xhal::tensor<float>(ymb, {m, kK}));
    });
    Tally tally;
    std::vector<int64_t> entry_cols;
    std::vector<float> entry_vals;
    float got[kK];
    for (int64_t i : rows) {
      ymb.read(got, sizeof got, static_cast<uint64_t>(i) * sizeof got);
      const RowColumns rc(m, i, len_of(i));
      entry_cols.clear();
      entry_vals.clear();
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
        entry_cols.push_back(rc(e - rp[i], e));
        entry_vals.push_back(entry_value(static_cast<uint64_t>(e), kValSeed));
      }
      for (int64_t c = 0; c < kK; ++c) {
        terms.clear();
        for (size_t t = 0; t < entry_cols.size(); ++t)
          terms.push_back(entry_vals[t] * xm[entry_cols[t] * kK + c]);
        tally.check(got[c], canonical(terms), [&] {
          return "Y[" + std::to_string(i) + ", " + std::to_string(c) + "] (a row of " +
                 std::to_string(len_of(i)) + " entries)";
        });
      }
    }
    ok = tally.report("matrix spmm A X", "elements", op_s, t0) && ok;
  }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "xhal-scale-check: ops on tensors of more than 2^31 elements against the cpu device"};
  std::string device = "cuda:0";
  int64_t rows = (int64_t{1} << 21) + 17, width = 1024, count = (int64_t{1} << 21) + 5;
  int64_t matrix_nnz = 0, matrix_rows = int64_t{1} << 24;
  bool skip_dense = false, from_buffers = false;
  app.add_option("--device", device, "the device to check (a selector)");
  app.add_option("--rows", rows, "rows of the source table")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 40));
  app.add_option("--width", width, "row width")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--count", count, "indices")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  app.add_option("--matrix-nnz", matrix_nnz,
                 "entries of the sparse matrix step (0: skipped; e.g. 2164260864 = 2^31 + 2^24)")
      ->check(CLI::Range(int64_t{0}, (int64_t{1} << 40) - 1));
  app.add_option("--matrix-rows", matrix_rows, "rows (and columns) of the sparse matrix")
      ->check(CLI::Range(int64_t{4096}, (int64_t{1} << 31) - 1));
  app.add_flag("--skip-dense", skip_dense,
               "skip index_select, index_add and spmm (the cpu device is not opened)");
  app.add_flag("--matrix-from-buffers", from_buffers,
               "create the matrix from device buffers (its pattern validated on the device)");
  CLI11_PARSE(app, argc, argv);
  try {
    const xhal::Device dev = xhal::Device::open(device);
    const auto t0 = std::chrono::steady_clock::now();
    bool ok = true;
    if (skip_dense) {
      std::printf("device %s; index_select, index_add and spmm skipped (--skip-dense)\n",
                  device.c_str());
    } else {
      const xhal::Device ref = xhal::Device::open("cpu");
      const uint64_t src_elems = static_cast<uint64_t>(rows) * width;
      const uint64_t out_elems = static_cast<uint64_t>(count) * width;
      std::printf("device %s; src [%lld, %lld] (%llu elements), out [%lld, %lld] (%llu elements)\n",
                  device.c_str(), static_cast<long long>(rows), static_cast<long long>(width),
                  static_cast<unsigned long long>(src_elems), static_cast<long long>(count),
                  static_cast<long long>(width), static_cast<unsigned long long>(out_elems));
      Pair src = allocate(dev, ref, src_elems * 4);
      {
        constexpr uint64_t kSlice = uint64_t{1} << 26;
        std::vector<float> host(kSlice);
        for (uint64_t at = 0; at < src_elems; at += kSlice) {
          const uint64_t n = std::min(kSlice, src_elems - at);
          for (uint64_t i = 0; i < n; ++i) host[i] = value_at(at + i);
          src.dev.write(host.data(), n * 4, at * 4);
          src.ref.write(host.data(), n * 4, at * 4);
        }
      }
      std::printf("inputs written (%.1f s)\n", seconds_since(t0));

      // index_select: random rows, the last 64 rows at the end.
      std::vector<int64_t> idx(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i)
        idx[i] = i >= count - 64 ? rows - 1 - (count - 1 - i) % rows
                                 : static_cast<int64_t>(mix(uint64_t(i) + 7) % uint64_t(rows));
      Pair out = allocate(dev, ref, out_elems * 4);
      {
        const auto pd = xhal::IndexPlan::create(dev, idx, static_cast<uint64_t>(rows));
        const auto pr = xhal::IndexPlan::create(ref, idx, static_cast<uint64_t>(rows));
        xhal::index_select(dev, pd, xhal::tensor<float>(src.dev, {rows, width}),
                           xhal::tensor<float>(out.dev, {count, width}));
        xhal::index_select(ref, pr, xhal::tensor<float>(src.ref, {rows, width}),
                           xhal::tensor<float>(out.ref, {count, width}));
        dev.synchronize();
        ref.synchronize();
      }
      ok = compare("index_select", out, out_elems, t0) && ok;

      // index_add into a copy of src: random rows, one in ten to 16 hubs,
      // the last rows included.
      Pair dst = allocate(dev, ref, src_elems * 4);
      src.dev.copy_to(dst.dev, src_elems * 4);
      src.ref.copy_to(dst.ref, src_elems * 4);
      for (int64_t i = 0; i < count; ++i) {
        const uint64_t h = mix(uint64_t(i) + 99);
        idx[i] = i >= count - 64 ? rows - 1 - (count - 1 - i) % rows
                 : h % 10 == 0   ? static_cast<int64_t>((h >> 8) % 16) * (rows / 16)
                                 : static_cast<int64_t>((h >> 8) % uint64_t(rows));
      }
      {
        const auto pd = xhal::IndexPlan::create(dev, idx, static_cast<uint64_t>(rows));
        const auto pr = xhal::IndexPlan::create(ref, idx, static_cast<uint64_t>(rows));
        xhal::index_add(dev, pd, 0.5f, xhal::tensor<float>(out.dev, {count, width}),
                        xhal::tensor<float>(dst.dev, {rows, width}));
        xhal::index_add(ref, pr, 0.5f, xhal::tensor<float>(out.ref, {count, width}),
                        xhal::tensor<float>(dst.ref, {rows, width}));
        dev.synchronize();
        ref.synchronize();
      }
      ok = compare("index_add", dst, src_elems, t0) && ok;
      idx = {};
      out = {};

      // spmm: Y = A X with X = src [rows, width] (Y written into dst).
      {
        std::vector<int64_t> rp{0}, ci;
        std::vector<float> v;
        for (int64_t i = 0; i < rows; ++i) {
          std::vector<int64_t> cols{i, static_cast<int64_t>(mix(uint64_t(i)) % uint64_t(rows))};
          if (i % 65536 == 1)  // a long row: 5,000 entries
            for (int64_t t = 0; t < 5000; ++t) cols.push_back((i + 1 + t * 37) % rows);
          std::sort(cols.begin(), cols.end());
          cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
          for (int64_t c : cols) {
            ci.push_back(c);
            v.push_back(value_at(uint64_t(ci.size()) + (uint64_t{1} << 50)));
          }
          rp.push_back(static_cast<int64_t>(ci.size()));
        }
        const auto ad = xhal::Csr::create(dev, rows, rows, rp, ci, v);
        const auto ar = xhal::Csr::create(ref, rows, rows, rp, ci, v);
        std::printf("matrices created, %zu entries (%.1f s)\n", ci.size(), seconds_since(t0));
        xhal::spmm(dev, ad, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(src.dev, {rows, width}),
                   0.0f, xhal::tensor<float>(dst.dev, {rows, width}));
        xhal::spmm(ref, ar, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(src.ref, {rows, width}),
                   0.0f, xhal::tensor<float>(dst.ref, {rows, width}));
        dev.synchronize();
        ref.synchronize();
        ok = compare("spmm", dst, src_elems, t0) && ok;
      }
    }  // the dense steps' buffers and the cpu device go before the matrix step

    if (matrix_nnz > 0) ok = matrix_step(dev, matrix_rows, matrix_nnz, from_buffers, t0) && ok;
    std::printf("%s (%.1f s)\n", ok ? "all steps PASS" : "FAILED", seconds_since(t0));
    return ok ? 0 : 1;
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "xhal-scale-check: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "xhal-scale-check: %s\n", e.what());
    return 2;
  }
}
