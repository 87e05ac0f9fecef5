// The device selector (XHAL_DEVICE, xhal_device_open): parsing, which
// backends it needs loaded, and ordering a device list by it.
// Grammar and behaviour: docs/device-selection.md.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "xhal/status.h"

namespace xhal {

struct SelectorTerm {
  enum class Device { kAny, kIndex, kStableId };
  bool negate = false;
  std::string backend;  // "*" matches every backend
  Device device = Device::kAny;
  uint32_t index = 0;     // when kIndex
  std::string stable_id;  // when kStableId
};

struct Selector {
  std::string text;  // as given, for messages
  std::vector<SelectorTerm> terms;
  bool has_positive = false;  // only '!' terms: start from every device
};

// What the matcher needs to know about a device.
struct SelectableDevice {
  std::string_view backend;
  uint32_t backend_index = 0;
  std::string_view stable_id;
};

// Parses `text` (NULL or blank = no selector). On a malformed selector fails
// with XHAL_INVALID_ARGUMENT quoting `source` ("XHAL_DEVICE"), the selector
// and the offending term.
xhal_status_t parse_selector(const char* text, const char* source, Selector* out);

// Whether the plugin of `backend` must be loaded: some positive term can
// match it (or there are only '!' terms) and no '!' term drops it entirely.
bool selector_needs_backend(const Selector& selector, std::string_view backend);

// Indices into `devices` (already in default order) of the selected devices,
// in preference order, without duplicates.
std::vector<size_t> apply_selector(const Selector& selector,
                                   std::span<const SelectableDevice> devices);

}  // namespace xhal
