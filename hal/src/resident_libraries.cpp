#include "resident_libraries.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace xhal {
namespace {

std::string canonical(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path c = std::filesystem::weakly_canonical(path, ec);
  return ec ? path : c.string();
}

}  // namespace

std::vector<std::string> mapped_objects() {
  std::vector<std::string> names;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name && info->dlpi_name[0] != '\0') {
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        }
        return 0;
      },
      &names);
  std::sort(names.begin(), names.end());
  return names;
}

void keep_new_dependencies_resident(const std::vector<std::string>& before,
                                    const std::string& plugin_path) {
  const std::string plugin = canonical(plugin_path);
  for (const std::string& name : mapped_objects()) {
    if (std::binary_search(before.begin(), before.end(), name)) continue;
    if (canonical(name) == plugin) continue;
    // NOLOAD finds the mapped object; NODELETE pins it; the dlclose only
    // drops the reference this dlopen took.
    if (void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) {
      dlclose(handle);
    }
  }
}

}  // namespace xhal
