#include "sparse_generators.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace xhal::conf::sparse {

double Rng::uniform(double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(gen_);
}
int64_t Rng::integer(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(gen_);
}
float Rng::nonzero(float lo, float hi) {
  const float m = static_cast<float>(uniform(lo, hi));
  return chance(0.5) ? -m : m;
}
bool Rng::chance(double p) { return uniform(0.0, 1.0) < p; }

std::vector<float> random_values(Rng& rng, size_t n, float lo, float hi) {
  std::vector<float> v(n);
  for (auto& x : v) x = rng.nonzero(lo, hi);
  return v;
}

Csr from_row_lists(int64_t rows, int64_t cols, std::vector<std::vector<int64_t>> row_cols) {
  Csr a;
  a.rows = rows;
  a.cols = cols;
  a.row_ptr.assign(rows + 1, 0);
  for (int64_t i = 0; i < rows; ++i) {
    auto& r = row_cols[i];
    std::sort(r.begin(), r.end());
    if (std::adjacent_find(r.begin(), r.end()) != r.end())
      throw std::invalid_argument("from_row_lists: duplicate column");
    a.col_idx.insert(a.col_idx.end(), r.begin(), r.end());
    a.row_ptr[i + 1] = a.nnz();
  }
  a.values.assign(a.nnz(), 1.0f);
  return a;
}

std::vector<float> dominant_values(const Csr& a, Rng& rng) {
  std::vector<int64_t> row_off(a.rows, 0), col_off(a.cols, 0);
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e)
      if (a.col_idx[e] != i) {
        ++row_off[i];
        ++col_off[a.col_idx[e]];
      }
  std::vector<float> v(a.nnz());
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t j = a.col_idx[e];
      if (j == i) {
        v[e] = rng.nonzero(1.0f, 2.0f);
      } else {
        const float scale = 1.0f / float(std::max(row_off[i], col_off[j]));
        v[e] = rng.nonzero(0.05f, 0.5f) * scale;
      }
    }
  }
  return v;
}

Csr chain(int64_t n, Rng& rng) {
  std::vector<std::vector<int64_t>> rows(n);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0) rows[i].push_back(i - 1);
    rows[i].push_back(i);
  }
  Csr a = from_row_lists(n, n, std::move(rows));
  a.values = dominant_values(a, rng);
  return a;
}

Csr confluence(int64_t n, Rng& rng) {
  std::vector<std::vector<int64_t>> rows(n);
  for (int64_t k = 0; k < n; ++k) {
    if (k >= 2) rows[k].push_back(rng.integer(0, k - 2));
    if (k >= 1) rows[k].push_back(k - 1);
    rows[k].push_back(k);
  }
  Csr a = from_row_lists(n, n, std::move(rows));
  a.values = dominant_values(a, rng);
  return a;
}

Csr river_tree(int64_t n, Rng& rng, int64_t max_span) {
  std::vector<std::vector<int64_t>> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i].push_back(i);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t down = i + rng.integer(1, max_span);
    if (down < n) rows[down].push_back(i);  // else i is an outlet
  }
  Csr a = from_row_lists(n, n, std::move(rows));
  for (int64_t p = 0; p < n; ++p) {
    const int64_t upstream = a.row_ptr[p + 1] - a.row_ptr[p] - 1;
    for (int64_t e = a.row_ptr[p]; e < a.row_ptr[p + 1]; ++e) {
      a.values[e] = a.col_idx[e] == p
                        ? float(rng.uniform(1.0, 2.0))
                        : -float(rng.uniform(0.1, 0.9)) / float(std::max<int64_t>(upstream, 1));
    }
  }
  return a;
}

Csr few_term_columns(int64_t n, Rng& rng) {
  std::vector<std::vector<int64_t>> rows(n);
  for (int64_t i = 0; i < n; ++i) rows[i].push_back(i);
  for (int64_t j = 0; j < n; ++j) {
    const double u = rng.uniform(0.0, 1.0);
    const int64_t want = u < 0.40   ? 0
                         : u < 0.70 ? 1
                         : u < 0.85 ? 2
                         : u < 0.93 ? 3
                         : u < 0.97 ? 4
                         : u < 0.99 ? 5
                                    : 40;
    const int64_t span = std::min<int64_t>(300, n - 1 - j);
    std::vector<int64_t> below;
    for (int64_t t = 0; t < want && int64_t(below.size()) < span; ++t) {
      const int64_t i = j + rng.integer(1, span);
      if (std::find(below.begin(), below.end(), i) == below.end()) below.push_back(i);
    }
    for (int64_t i : below) rows[i].push_back(j);
  }
  Csr a = from_row_lists(n, n, std::move(rows));
  std::vector<double> row_sum(n, 0.0), col_sum(n, 0.0);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t j = a.col_idx[e];
      if (j == i) continue;
      const float v = rng.chance(0.01)
                          ? -0.0f
                          : rng.nonzero(1.0f, 2.0f) * float(std::pow(10.0, rng.uniform(-3.0, 3.0)));
      a.values[e] = v;
      row_sum[i] += std::fabs(v);
      col_sum[j] += std::fabs(v);
    }
  // Off-diagonals scaled so that every row and column sums to less than 1
  // in magnitude: bounded solves with the stored diagonal and with a unit one.
  for (int64_t i = 0; i < n; ++i)
    for (int64_t e = a.row_ptr[i]; e < a.row_ptr[i + 1]; ++e) {
      const int64_t j = a.col_idx[e];
      a.values[e] = j == i ? float(rng.uniform(1.0, 2.0))
                           : a.values[e] / float(1.0 + std::max(row_sum[i], col_sum[j]));
    }
  return a;
}

int64_t dependency_levels(const Csr& lower) {
  std::vector<int64_t> level(lower.rows, 1);
  int64_t deepest = lower.rows > 0 ? 1 : 0;
  for (int64_t i = 0; i < lower.rows; ++i) {
    for (int64_t e = lower.row_ptr[i]; e < lower.row_ptr[i + 1]; ++e)
      if (lower.col_idx[e] < i) level[i] = std::max(level[i], level[lower.col_idx[e]] + 1);
    deepest = std::max(deepest, level[i]);
  }
  return deepest;
}

Csr random_matrix(int64_t rows, int64_t cols, Rng& rng, const RandomShape& shape) {
  std::vector<std::vector<int64_t>> lists(rows);
  std::vector<char> used(cols, 0);
  for (int64_t i = 0; i < rows; ++i) {
    if (rng.chance(shape.empty_row_fraction)) continue;
    const bool hub = i < shape.hub_rows * 7 && i % 7 == 3;  // spread hubs out
    const int64_t want =
        hub ? int64_t(shape.hub_row_fill * double(cols))
            : rng.integer(0, std::max<int64_t>(0, int64_t(2.0 * shape.mean_per_row)));
    std::fill(used.begin(), used.end(), 0);
    for (int64_t h = 0; h < std::min(shape.hub_cols, cols); ++h) {
      if (rng.chance(shape.hub_col_fill)) {
        const int64_t c = (h * 13) % cols;  // fixed hub columns
        if (!used[c]) {
          used[c] = 1;
          lists[i].push_back(c);
        }
      }
    }
    for (int64_t t = 0; t < std::min(want, cols); ++t) {
      const int64_t c = rng.integer(0, cols - 1);
      if (!used[c]) {
        used[c] = 1;
        lists[i].push_back(c);
      }
    }
  }
  Csr a = from_row_lists(rows, cols, std::move(lists));
  a.values = random_values(rng, a.nnz());
  return a;
}

Csr random_triangular(int64_t n, Rng& rng, xhal_triangle_t triangle, double mean_off,
                      bool with_diagonal) {
  std::vector<std::vector<int64_t>> lists(n);
  const bool lower = triangle == XHAL_TRIANGLE_LOWER;
  // Off-diagonal candidates of row i: [0, i) for lower, (i, n) for upper.
  auto add_off = [&](int64_t i, int64_t j) {
    if (j == i || (lower ? j > i : j < i)) return;
    if (std::find(lists[i].begin(), lists[i].end(), j) == lists[i].end()) lists[i].push_back(j);
  };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t avail = lower ? i : n - 1 - i;
    if (avail == 0) continue;
    const int64_t want = rng.integer(0, int64_t(2.0 * mean_off));
    for (int64_t t = 0; t < want; ++t)
      add_off(i, lower ? rng.integer(0, i - 1) : rng.integer(i + 1, n - 1));
  }
  // Hub row (the last row for lower, the first for upper) and hub column
  // (the first column for lower, the last for upper): > 32 entries each.
  const int64_t hub_row = lower ? n - 1 : 0;
  for (int64_t j = 0; j < n; j += 2) add_off(hub_row, j);
  const int64_t hub_col = lower ? 0 : n - 1;
  for (int64_t i = 0; i < n; i += 2) add_off(i, hub_col);
  if (with_diagonal)
    for (int64_t i = 0; i < n; ++i) lists[i].push_back(i);
  Csr a = from_row_lists(n, n, std::move(lists));
  a.values = dominant_values(a, rng);
  return a;
}

std::vector<uint8_t> index_bytes(const std::vector<int64_t>& v, xhal_dtype_t dtype) {
  std::vector<uint8_t> out;
  if (dtype == XHAL_DTYPE_I32) {
    out.resize(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
      const int32_t x = static_cast<int32_t>(v[i]);
      std::memcpy(out.data() + 4 * i, &x, 4);
    }
  } else {
    out.resize(v.size() * 8);
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * 8);
  }
  return out;
}

}  // namespace xhal::conf::sparse
