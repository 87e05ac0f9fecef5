// The core's services as the kernels see them: set by init, read by any
// thread that reports a failure.
#include <atomic>

#include "dense_ops.h"

namespace xhal::cpu {
namespace {
std::atomic<const xhal_plugin_host_t*> g_host{nullptr};
}  // namespace

void set_host(const xhal_plugin_host_t* host) { g_host.store(host, std::memory_order_release); }

xhal_dtype_t csr_values_dtype(const xhal_plugin_csr_desc_t* desc) {
  // A core older than 1.6 passes a desc that ends before values_dtype.
  const xhal_plugin_host_t* host = g_host.load(std::memory_order_acquire);
  if (host == nullptr || host->abi_minor < 6) return XHAL_DTYPE_F32;
  // F16/BF16 come only from a 1.7 core, and only because this plugin claims
  // them for spmv/spmm.
  switch (desc->values_dtype) {
    case XHAL_DTYPE_F64:
    case XHAL_DTYPE_F16:
    case XHAL_DTYPE_BF16:
      return desc->values_dtype;
    default:
      return XHAL_DTYPE_F32;
  }
}

void set_error(const char* message) {
  const xhal_plugin_host_t* host = g_host.load(std::memory_order_acquire);
  if (host != nullptr && host->set_error != nullptr) host->set_error(message);
}

}  // namespace xhal::cpu
