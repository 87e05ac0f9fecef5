// Resolving public handles to core objects, with the message that names the
// argument when a handle is NULL, released, of another kind or made up.
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "handles.h"
#include "internal.h"

namespace xhal {
namespace {

const char* kind_name(uint64_t kind) {
  switch (kind) {
    case static_cast<uint64_t>(HandleKind::kDevice):
      return "device";
    case static_cast<uint64_t>(HandleKind::kBuffer):
      return "buffer";
    case static_cast<uint64_t>(HandleKind::kPlan):
      return "index plan";
    case static_cast<uint64_t>(HandleKind::kMatrix):
      return "CSR matrix";
  }
  return nullptr;
}

// Labels ("cpu:0") of retired device handles, so that a released device is
// named as such; forgotten when the runtime shuts down.
// At most kKept of them (a program that opens and closes a device in a loop
// must not grow): older ones get the generic message.
struct RetiredDevices {
  static constexpr size_t kKept = 1024;
  std::mutex mutex;
  std::map<uint64_t, std::string> labels;
  std::deque<uint64_t> order;
};
RetiredDevices& retired_devices() {
  static RetiredDevices* r = new RetiredDevices;
  return *r;
}

}  // namespace

void remember_released_device(uint64_t handle, const std::string& label) {
  RetiredDevices& r = retired_devices();
  std::lock_guard lock(r.mutex);
  if (r.labels.emplace(handle, label).second) r.order.push_back(handle);
  if (r.order.size() > RetiredDevices::kKept) {
    r.labels.erase(r.order.front());
    r.order.pop_front();
  }
}

void forget_released_devices() {
  RetiredDevices& r = retired_devices();
  std::lock_guard lock(r.mutex);
  r.labels.clear();
  r.order.clear();
}

xhal_status_t stale_handle(HandleKind want, uint64_t bits, const char* arg) {
  const char* wanted = kind_name(static_cast<uint64_t>(want));
  if (bits == 0) return fail(XHAL_INVALID_ARGUMENT, "argument '%s' is NULL", arg);
  if (want == HandleKind::kDevice) {
    RetiredDevices& r = retired_devices();
    std::lock_guard lock(r.mutex);
    if (auto it = r.labels.find(bits); it != r.labels.end())
      return fail(XHAL_INVALID_ARGUMENT, "argument '%s' (%s) was released", arg,
                  it->second.c_str());
  }
  const uint64_t kind = bits >> 60;
  if (kind != static_cast<uint64_t>(want) && kind_name(kind) &&
      handles().find(static_cast<HandleKind>(kind), bits))
    return fail(XHAL_INVALID_ARGUMENT, "argument '%s' is a %s handle, not a %s handle", arg,
                kind_name(kind), wanted);
  return fail(XHAL_INVALID_ARGUMENT,
              "argument '%s' is not a live %s handle (it was released, or xhal never returned it)",
              arg, wanted);
}

}  // namespace xhal
