// XHAL_DEVICE_OPTIONS: the items meant for one backend.
#include <cstdlib>
#include <string>

#include "internal.h"

namespace xhal {

xhal_status_t options_for(const std::string& backend, std::string* out) {
  out->clear();
  const char* env = std::getenv("XHAL_DEVICE_OPTIONS");
  if (!env) return XHAL_OK;
  const std::string all = env;
  size_t begin = 0;
  while (begin <= all.size()) {
    size_t end = all.find(',', begin);
    if (end == std::string::npos) end = all.size();
    std::string item = all.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('='), colon = item.find(':');
    if (eq == std::string::npos || eq == 0 ||
        (colon != std::string::npos && colon < eq && colon == 0))
      return fail(XHAL_INVALID_ARGUMENT,
                  "XHAL_DEVICE_OPTIONS='%s': item '%s' is not [backend:]name=value", env,
                  item.c_str());
    if (colon != std::string::npos && colon < eq) {
      if (item.compare(0, colon, backend) != 0) continue;  // for another backend
      item = item.substr(colon + 1);
    }
    if (!out->empty()) *out += ',';
    *out += item;
  }
  return XHAL_OK;
}

}  // namespace xhal
