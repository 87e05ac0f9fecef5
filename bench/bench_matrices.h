// The sparse benchmark matrices (bench/sparse_bench.cpp), generated the
// same way wherever they are timed: xhal-bench, and the cuSPARSE comparison
// of bench/gpu/cusparse_spmm.cu, which runs the peer on the very same
// matrices. Header-only so that the CUDA program can include it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace xhal_bench {

constexpr int64_t kRows = 1000000;

struct HostCsr {
  std::string label;
  int64_t n = 0;
  std::vector<int32_t> row_ptr, col_idx;
  std::vector<float> values;
  int64_t nnz() const { return static_cast<int64_t>(col_idx.size()); }
};

// Reach i drains into a reach among the 512 numbered just below it (so the
// numbering is topological and the matrix lower triangular); depth grows
// about one level per 256 reaches: ~4000 levels of ~250 independent reaches.
inline HostCsr make_river() {
  HostCsr a;
  a.n = kRows;
  std::mt19937_64 rng(20261129);
  std::uniform_real_distribution<float> weight(0.2f, 0.8f);
  a.row_ptr.push_back(0);
  std::vector<int32_t> depth(kRows, 0);
  for (int64_t i = 0; i < kRows; ++i) {
    if (i > 0) {
      const int64_t down = std::max<int64_t>(0, i - 1 - static_cast<int64_t>(rng() % 512));
      a.col_idx.push_back(static_cast<int32_t>(down));
      a.values.push_back(-weight(rng));
      depth[i] = depth[down] + 1;
    }
    a.col_idx.push_back(static_cast<int32_t>(i));
    a.values.push_back(1.0f);
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  a.label = "river 1e6 reaches, " +
            std::to_string(*std::max_element(depth.begin(), depth.end()) + 1) + " levels";
  return a;
}

// Row lengths uniform in [0, 18] plus 2000 hub rows with Pareto lengths (up
// to 2e5); columns j = i * u^2 (low columns are hubs of A^T); unit diagonal
// and small off-diagonals so the solve stays bounded.
inline HostCsr make_random() {
  HostCsr a;
  a.n = kRows;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<int64_t> len(kRows);
  for (auto& l : len) l = static_cast<int64_t>(rng() % 19);
  for (int h = 0; h < 2000; ++h) {
    const int64_t i = kRows / 2 + static_cast<int64_t>(u(rng) * (kRows / 2));
    len[i] = std::min<int64_t>(200000, static_cast<int64_t>(100.0 / std::pow(u(rng) + 1e-9, 0.8)));
  }
  a.row_ptr.push_back(0);
  std::vector<int32_t> cols;
  for (int64_t i = 0; i < kRows; ++i) {
    cols.clear();
    const int64_t m = std::min(len[i], i);
    for (int64_t t = 0; t < m; ++t) {
      const double v = u(rng);
      cols.push_back(static_cast<int32_t>(v * v * static_cast<double>(i)));
    }
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(static_cast<float>(u(rng) - 0.5) / static_cast<float>(m + 1));
    }
    a.col_idx.push_back(static_cast<int32_t>(i));
    a.values.push_back(1.0f);
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  a.label = "random 1e6 rows, " + std::to_string(a.nnz()) + " nnz";
  return a;
}

// 10 entries per row in uniformly random columns (sorted, distinct), values
// in [-0.5, 0.5): the uniform random matrix of the SpMV/SpMM comparison.
inline HostCsr make_uniform() {
  HostCsr a;
  a.n = kRows;
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  a.row_ptr.push_back(0);
  std::vector<int32_t> cols;
  for (int64_t i = 0; i < kRows; ++i) {
    cols.clear();
    for (int t = 0; t < 10; ++t) cols.push_back(static_cast<int32_t>(rng() % kRows));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int32_t c : cols) {
      a.col_idx.push_back(c);
      a.values.push_back(u(rng));
    }
    a.row_ptr.push_back(static_cast<int32_t>(a.col_idx.size()));
  }
  a.label = "uniform random 1e6 rows, " + std::to_string(a.nnz()) + " nnz";
  return a;
}

}  // namespace xhal_bench
