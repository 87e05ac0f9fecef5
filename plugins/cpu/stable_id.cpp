#include "stable_id.h"

namespace xhal::cpu {
namespace {
constexpr size_t kMaxModelIdLength = 100;
}  // namespace

std::string stable_id_of(const std::string& model) {
  std::string id = "cpu:";
  bool after_dash = true;  // no '-' right after "cpu:"
  for (const char c : model) {
    const bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '_' || c == '.' || c == '-';
    if (keep && !(c == '-' && after_dash)) {
      id += c;
      after_dash = c == '-';
    } else if (!keep && !after_dash) {
      id += '-';
      after_dash = true;
    }
  }
  // Room for the virtual suffix within the 127 characters of the slot.
  if (id.size() > kMaxModelIdLength) id.resize(kMaxModelIdLength);
  while (id.size() > 4 && id.back() == '-') id.pop_back();
  if (id.size() == 4) id += "unknown";
  return id;
}

std::string virtual_stable_id(const std::string& id0, uint32_t k) {
  return id0 + ":virtual-" + std::to_string(k);
}

}  // namespace xhal::cpu
