// The cpu plugin's options (docs/device-options.md), from XHAL_DEVICE_OPTIONS.
#pragma once

#include <cstdint>
#include <string>

namespace xhal::cpu {

struct Options {
  // Virtual devices the plugin lists (a testing aid: two devices of one
  // backend let CI run the cross-device checks). All share this machine's
  // cores and memory.
  uint32_t devices = 1;
};
inline constexpr uint32_t kMaxVirtualDevices = 16;

// Parses "name=value,..." (the plugin's items; "" for none). On failure
// returns false with `error` naming the item and the names the plugin knows.
bool parse_options(const char* text, Options* out, std::string* error);
// The options in force, every one with its value: "devices=1".
std::string format_options(const Options& options);

}  // namespace xhal::cpu
