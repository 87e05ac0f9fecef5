// Generators of sparse test matrices: the shapes users hit (chains,
// confluences, river networks, power-law graphs with hubs and empty rows)
// with fresh random values that are never zero.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "sparse_reference.h"
#include "xhal/types.h"

namespace xhal::conf::sparse {

// A seeded generator (tests seed it from the runner's per-test seed).
class Rng {
 public:
  explicit Rng(uint64_t seed) : seed_(seed), gen_(seed) {}
  uint64_t seed() const { return seed_; }
  double uniform(double lo, double hi);
  int64_t integer(int64_t lo, int64_t hi);  // inclusive
  float nonzero(float lo, float hi);        // random sign, |v| in [lo, hi]
  bool chance(double p);

 private:
  uint64_t seed_;
  std::mt19937_64 gen_;
};

std::vector<float> random_values(Rng& rng, size_t n, float lo = 0.25f, float hi = 2.0f);

// A CSR from each row's column list (sorted here; must be unique).
Csr from_row_lists(int64_t rows, int64_t cols, std::vector<std::vector<int64_t>> row_cols);

// Values that keep a triangular solve well conditioned for op = A and A^T:
// diagonal |v| in [1, 2], off-diagonal |v| in [0.05, 0.5] / max(off-diagonal
// entries of the row, of the column); random signs.
std::vector<float> dominant_values(const Csr& a, Rng& rng);

// Lower bidiagonal: (i, i-1) and (i, i). A single path of n reaches.
Csr chain(int64_t n, Rng& rng);
// Lower triangular; rows k >= 2 hold two off-diagonals, (k, k-1) and
// (k, j) with j < k-1 random, plus the diagonal: every row index repeats
// in the COO row list (two upstream reaches join).
Csr confluence(int64_t n, Rng& rng);
// A river network of n reaches: a random tree numbered topologically (the
// downstream reach of i is in (i, i + max_span]; past n it is an outlet).
// Lower-triangular I - W: row p holds -w for each upstream reach and a
// diagonal in [1, 2]. max_span 64 gives thousands of levels at 10^5 reaches.
Csr river_tree(int64_t n, Rng& rng, int64_t max_span = 64);
// Lower triangular n x n with a stored diagonal whose columns mostly hold
// 0, 1 or 2 off-diagonal entries (about 15% hold 3, 4, 5 or 40), each
// within 300 rows below the diagonal: the shape of a river network's A^T,
// where a backend may sum a column of at most two terms in any order (two
// terms from +0 commute) but must keep the canonical order beyond. Off-
// diagonal magnitudes span six decades within a column (so the order of 3
// or more terms shows in the bits), 1% of them -0, scaled so that each row
// and column sums to less than 1 in magnitude; the diagonal is in [1, 2]
// (x stays bounded for op = A and A^T, stored or unit diagonal).
Csr few_term_columns(int64_t n, Rng& rng);
// Longest dependency chain (levels of a level-scheduled solve) of a lower
// triangular pattern.
int64_t dependency_levels(const Csr& lower);

struct RandomShape {
  double mean_per_row = 4.0;        // off-hub rows: 0 .. 2*mean entries
  double empty_row_fraction = 0.1;  // rows forced empty
  int64_t hub_rows = 2;             // rows with hub_row_fill of the columns
  double hub_row_fill = 0.5;
  int64_t hub_cols = 1;  // columns present in hub_col_fill of rows
  double hub_col_fill = 0.6;
};
// Random rows x cols matrix with empty rows and hub rows/columns (so both A
// and A^T rows exceed one 32-term chunk); values from random_values.
Csr random_matrix(int64_t rows, int64_t cols, Rng& rng, const RandomShape& shape = {});

// Random n x n triangular matrix with a full diagonal (unless
// with_diagonal is false), mean_off off-diagonals per row, one hub row and
// one hub column longer than a 32-term chunk; dominant_values.
Csr random_triangular(int64_t n, Rng& rng, xhal_triangle_t triangle, double mean_off = 3.0,
                      bool with_diagonal = true);

// Index array in the matrix's index dtype (I32 or I64), as raw bytes.
std::vector<uint8_t> index_bytes(const std::vector<int64_t>& v, xhal_dtype_t dtype);

}  // namespace xhal::conf::sparse
