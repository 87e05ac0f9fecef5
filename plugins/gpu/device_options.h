// Tuning and diagnostic options of a GPU device (docs/device-options.md),
// parsed once when the device opens from the "name=value,..." text the core
// passes to device_open_with_options. Plain C++ (no GPU code): the same file
// is compiled into the plugins and into tests/gpu_options.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace xhal::gpu {

// The backend a plugin was built for: some options exist on CUDA only.
enum class GpuBackend { kCuda, kRocm };

enum class SolveSchedule {
  kSyncFree,  // one launch per right-hand side, schedule built on the device (CUDA)
  kLevels,    // level batches built on the host (the only schedule on ROCm)
};

enum class SolvePoll { kAuto, kConverged, kLanes };

// f32/f16/bf16 spmv's rows of at most 32 entries (docs/gpu.md, "spmv/spmm").
enum class SpmvShortRows {
  kAuto,   // kRows where no row of the pattern holds more than 4 entries
  kTiles,  // tiles of 256 rows, their entries staged in shared memory
  kRows,   // one thread a row
};

struct DeviceOptions {
  SolveSchedule solve_schedule = SolveSchedule::kSyncFree;
  int solve_block_threads = 128;  // 32..256, a multiple of 32
  int solve_blocks_per_sm = 0;    // 0: auto (SyncFreeSchedule::blocks_per_sm)
  SolvePoll solve_poll = SolvePoll::kAuto;
  int solve_poll_terms = 0;     // 0: auto (32 with rows of > 32 terms, else 16)
  uint32_t solve_sleep_ns = 0;  // back-off while polling; 0: none
  // The norm backward fuses dgamma/dbeta into the row kernel from this many
  // rows on, counted in whole colsum blocks of 32 rows.
  int64_t norm_backward_fused_from_rows = 4096;
  // Rows longer than one block: one launch whose blocks wait for each
  // other's partials (true, CUDA) or a launch per reduction (false).
  bool rows_resident = true;
  // sparse_index=64: every CSR matrix takes the 64-bit pattern path (entry
  // offsets int64), which auto keeps for matrices of 2^31 - 1 entries or
  // more. For checking that path on small matrices; same bits either way.
  bool sparse_index64 = false;
  // spmv's rows of more than 1024 entries: the row's last piece adds the
  // piece values inside the launch (true) or a second launch does (false).
  // Same bits.
  bool spmv_fused_combine = true;
  SpmvShortRows spmv_short_rows = SpmvShortRows::kAuto;  // same bits either way
  bool trace = false;  // csr_create prints where its time goes to stderr
};

// Today's defaults for `backend` (ROCm solves by level batches).
DeviceOptions default_device_options(GpuBackend backend);

// Parses `text` ("name=value,name=value", "" for none; empty items are
// skipped, a later item overrides an earlier one) over the defaults of
// `backend`. On an unknown name, a name that does not apply to `backend`, or
// a malformed or out-of-range value, returns false and sets *error to a
// message that names the item and lists the known options; *out is then
// left unchanged.
bool parse_device_options(const char* text, GpuBackend backend, DeviceOptions* out,
                          std::string* error);

// Every option `backend` knows with its value in `options`, in the same
// "name=value,..." form parse_device_options reads.
std::string format_device_options(const DeviceOptions& options, GpuBackend backend);

// The names `backend` knows, comma-separated, for messages.
std::string known_device_options(GpuBackend backend);

// Copies `text` into out[0 .. capacity), truncated and NUL-terminated
// (nothing is written when capacity is 0).
void copy_option_text(const std::string& text, char* out, size_t capacity);

}  // namespace xhal::gpu
