// The CPU plugin's CSR matrix: the pattern copied at creation (indices
// narrowed to int32 when everything fits), the transposed pattern, and the
// level schedules of the triangular solves. Values (f32 or f64) are not kept
// here: they live in the core's values buffer and are read at op time.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <variant>
#include <vector>

#include "cpu_plugin.h"

namespace xhal::cpu {

// Whether an op runs on the team or on one thread, chosen by timing both
// now and then: on a busy machine a team that waits for a descheduled
// member can be far slower than one thread. The results are bit-identical
// either way, only the time differs.
class TeamChoice {
 public:
  TeamChoice() = default;
  TeamChoice(const TeamChoice& o)
      : calls_(o.calls_.load()), team_s_(o.team_s_.load()), single_s_(o.single_s_.load()) {}
  TeamChoice& operator=(const TeamChoice& o) {
    calls_ = o.calls_.load();
    team_s_ = o.team_s_.load();
    single_s_ = o.single_s_.load();
    return *this;
  }

  // Tries each way once, then takes the faster, retrying the slower one now
  // and then so that a change of load is noticed: one call in kExploreEvery
  // times how many times slower it was, so retries cost at most about
  // 1/kExploreEvery of the time.
  bool use_team() {
    const uint64_t call = calls_.fetch_add(1, std::memory_order_relaxed);
    const double team = team_s_.load(std::memory_order_relaxed);
    const double single = single_s_.load(std::memory_order_relaxed);
    if (team == 0.0) return true;
    if (single == 0.0) return false;
    const bool team_faster = team <= single;
    const double slowdown = team_faster ? single / team : team / single;
    const uint64_t every =
        kExploreEvery * static_cast<uint64_t>(slowdown < 256.0 ? slowdown + 0.5 : 256.0);
    return call % every == 0 ? !team_faster : team_faster;
  }
  void record(bool team, double seconds) {
    std::atomic<double>& slot = team ? team_s_ : single_s_;
    const double old = slot.load(std::memory_order_relaxed);
    slot.store(old == 0.0 ? seconds : 0.5 * old + 0.5 * seconds, std::memory_order_relaxed);
  }

 private:
  static constexpr uint64_t kExploreEvery = 16;
  std::atomic<uint64_t> calls_{0};
  std::atomic<double> team_s_{0.0}, single_s_{0.0};
};

// How a triangular solve over one pattern runs. Each row goes to one member
// of the team, which walks its rows in the solve's order (ascending for a
// lower solve, descending for an upper one) and, before reading x[j] of a
// row another member owns, waits for that row's done flag. Rows follow the
// owner of their latest dependency (a reach stays with its downstream
// reach) unless that member is ahead in work, so members advance through
// the rows side by side and rarely wait. A pattern whose levels are too
// narrow for sharing to pay (a chain) runs on one thread. The bits never
// depend on the schedule: each x[k] has one formula.
template <typename I>
struct SolveSchedule {
  bool built = false;          // the pattern lies in this solve's triangle
  int64_t levels = 0;          // length of the longest dependency chain
  int team = 1;                // members the rows were dealt to (1: one thread)
  std::vector<int64_t> first;  // [team + 1]: member t walks rows[first[t], first[t+1])
  std::vector<I> rows;
  mutable TeamChoice choice;
};

// One CSR pattern: A itself, or A^T (then perm maps its entries to A's).
template <typename I>
struct CsrPattern {
  int64_t rows = 0;
  std::vector<I> row_ptr;  // [rows + 1]
  std::vector<I> col_idx;  // [nnz]
  std::vector<I> perm;     // A^T only: [nnz] index into A's values
  // Every row i stores (i, i) (square A; then A and A^T alike): a solve's
  // one-thread walk takes it as the row's last entry (ascending) or first
  // (descending) without comparing columns.
  bool every_diagonal = false;
  // Solves walking this pattern's rows: ascending (its strictly lower part
  // holds the dependencies) and descending (strictly upper part).
  SolveSchedule<I> ascending, descending;
};

template <typename I>
struct CsrPatterns {
  CsrPattern<I> a, at;
  // For A^T x walked over A's rows: column j's running sums live in slots
  // [first_slot[j], first_slot[j+1]) (one per chunk of 32 entries, at least
  // one), and entry e adds into slot[e].
  std::vector<int64_t> first_slot;  // [cols + 1]
  std::vector<I> slot;              // [nnz]
  // A team of split_team members splits the columns as balanced_rows does
  // over A^T; row_split[(t - 1) * rows + i] is the first entry of row i in
  // member t's columns (t >= 1), so no member searches the rows per call.
  int split_team = 1;
  std::vector<I> row_split;
  // Position of each entry of A in the transposed order (inverse of t_perm).
  std::vector<I> t_pos;  // [nnz]
  // 1 when A's row i stores (i, i) (square A only): the transposed solve
  // then skips it in row i and column i without reading either's indices.
  std::vector<uint8_t> has_diagonal;  // [rows]
  // The transposed solve on one thread pushes each solved x[i] into running
  // sums of the columns of A's row i when few columns hold more than
  // kPushMaxTerms off-diagonal entries (push_transposed): a sum of at most
  // two terms from +0 has the same bits in either order, so only the columns
  // flagged kPushPulled are summed in the canonical order from slots of
  // their own (push_target below; sparse_solve.cpp, PushRowSolver). Square
  // A only.
  bool push_transposed = false;
  std::vector<uint8_t> push_flags;  // [rows]: kPushDiagonal | kPushPulled
  // The running sums live in slot j & push_slot_mask: a ring of a power of
  // two above the pattern's bandwidth (largest |i - j| of an entry) when that
  // is below kPushMaxRing, so that they stay in cache; else all ones.
  int64_t push_slot_mask = -1;
  // Entry e of A adds its term into slot push_target[e]: its column's ring
  // slot, or, for a pulled column j, a slot of its own in
  // [pull_first[j], pull_first[j + 1]), the column's off-diagonal terms in
  // ascending row order (the canonical order), so that the walk sums a
  // pulled column from consecutive slots instead of gathering its row of
  // A^T. push_slots: the ring and those slots.
  std::vector<I> push_target;  // [nnz]
  std::vector<I> pull_first;   // [rows + 1]
  int64_t push_slots = 0;
};

inline constexpr uint8_t kPushDiagonal = 1;  // A's row i stores (i, i)
inline constexpr uint8_t kPushPulled = 2;    // column i holds > kPushMaxTerms off-diagonal entries
inline constexpr int64_t kPushMaxRing = int64_t{1} << 16;

inline constexpr int64_t kPushMaxTerms = 2;
// Largest share of pulled columns for which the push walk is chosen (each
// pulled column costs a mispredicted branch and a sum of its slots).
inline constexpr int64_t kPushMaxPulledPercent = 20;

// A's values in A^T's order, for the transposed solves (csr_solve with
// A^T, csr_solve_backward with A): with them a column of A is read as a row,
// in order, instead of gathering A's values through t_perm (or scattering
// products into A^T's order) across the whole of nnz on every call. The core
// rewrites a matrix's values only through buffer_write, buffer_copy,
// buffer_fill and spgemm (docs/plugin-guide.md, csr_create), each of which
// bumps the buffer's version, so the copy is current while the version it
// was made from is. Made on the second call in a row that sees one version:
// a matrix whose values change every step never pays for it.
struct TransposedValues {
  std::mutex mutex;  // one user at a time; others take the gather path
  // [nnz] in the matrix's value dtype (set at creation), when built.
  std::variant<std::vector<float>, std::vector<double>> arrays;
  bool built = false;
  uint64_t built_version = 0;            // the values' version the copy was made from
  uint64_t seen_version = ~uint64_t{0};  // the version the last call saw

  template <typename T>
  std::vector<T>& of() {
    return std::get<std::vector<T>>(arrays);
  }
};

struct CsrMatrix {
  int64_t rows = 0, cols = 0, nnz = 0;
  CpuBuffer* values = nullptr;  // owned by the core; contents change
  bool f64 = false;             // values are double (else float)
  // f32, f64, or f16/bf16: 2-byte values that only spmv/spmm read (the core
  // refuses the other ops on them); with_value_type sees them as float.
  xhal_dtype_t values_dtype = XHAL_DTYPE_F32;
  bool lower = false, upper = false;  // where A's entries lie (diagonal counts for both)
  std::variant<CsrPatterns<int32_t>, CsrPatterns<int64_t>> patterns;
  // Team or one thread for A x, A^T x and the pattern gradient of a backward.
  mutable TeamChoice multiply_choice[2], gradient_choice;
  mutable TransposedValues transposed_values;

  // T must be the matrix's value type (with_value_type).
  template <typename T>
  T* value_data() const {
    return values == nullptr ? nullptr : reinterpret_cast<T*>(values->data);
  }
};

// Calls f(T{}) with T the matrix's value type, float or double.
template <typename F>
inline decltype(auto) with_value_type(const CsrMatrix& m, F&& f) {
  if (m.f64) return f(double{});
  return f(float{});
}

// Average rows per level below which a solve stays on one thread; the most
// work (rows + entries) a member may be ahead before rows go to another.
inline constexpr int64_t kParallelMinRowsPerLevel = 16;
inline constexpr int64_t kSolveBalanceSlack = 256;
inline constexpr int kMaxSolveTeam = 64;

// Analyses a solve over `p` walking rows ascending (lower) or descending
// (upper) for a team of `threads`. The pattern must lie in that triangle.
template <typename I>
SolveSchedule<I> build_solve_schedule(const CsrPattern<I>& p, bool ascending, int threads);

}  // namespace xhal::cpu
