// Picks the kernel table for the running CPU. The tables live in the
// per-ISA builds of isa_rows.cpp (namespaces isa_sse2, isa_avx2, isa_avx512f).
#include <atomic>

#include "isa_kernels.h"

namespace xhal::cpu {
namespace isa_sse2 {
extern const IsaKernels kTable;
}
#if XHAL_CPU_HAVE_ISA_avx512f
namespace isa_avx2 {
extern const IsaKernels kTable;
}
namespace isa_avx512f {
extern const IsaKernels kTable;
}
#endif

namespace {
std::atomic<const IsaKernels*> g_forced{nullptr};

const IsaKernels* best() {
#if XHAL_CPU_HAVE_ISA_avx512f
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return &isa_avx512f::kTable;
  if (__builtin_cpu_supports("avx2")) return &isa_avx2::kTable;
#endif
  return &isa_sse2::kTable;
}
}  // namespace

const IsaKernels& isa() {
  if (const IsaKernels* forced = g_forced.load(std::memory_order_acquire)) return *forced;
  static const IsaKernels* const chosen = best();
  return *chosen;
}

std::vector<const IsaKernels*> supported_isas() {
  std::vector<const IsaKernels*> tables = {&isa_sse2::kTable};
#if XHAL_CPU_HAVE_ISA_avx512f
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) tables.push_back(&isa_avx2::kTable);
  if (__builtin_cpu_supports("avx512f")) tables.push_back(&isa_avx512f::kTable);
#endif
  return tables;
}

void force_isa(const IsaKernels* table) { g_forced.store(table, std::memory_order_release); }

}  // namespace xhal::cpu
