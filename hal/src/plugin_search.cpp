#include "plugin_search.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <boost/dll/runtime_symbol_info.hpp>

namespace xhal {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPrefix = "libxhal-";
constexpr std::string_view kSuffix = ".so";

// Plugin files of one folder, sorted by name so the order is reproducible.
std::vector<fs::path> plugin_files_in(const fs::path& folder) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (backend_from_file_name(entry.path().filename().string()).empty()) continue;
    std::error_code type_ec;
    if (entry.is_directory(type_ec)) continue;
    files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

fs::path libxhal_folder() {
  std::error_code ec;
  const fs::path self = boost::dll::this_line_location(ec);
  if (ec) return {};
  // dladdr reports the path as it was loaded (e.g. bin/../lib); tidy it.
  std::error_code canonical_ec;
  const fs::path tidy = fs::weakly_canonical(self, canonical_ec);
  return (canonical_ec ? self : tidy).parent_path();
}

class CandidateList {
 public:
  void add(const fs::path& path, std::string problem = {}) {
    std::error_code ec;
    fs::path key = fs::weakly_canonical(path, ec);
    if (ec) key = path;
    if (std::find(seen_.begin(), seen_.end(), key) != seen_.end()) return;
    seen_.push_back(key);
    PluginCandidate c;
    c.path = path.string();
    c.backend = backend_from_file_name(path.filename().string());
    c.problem = std::move(problem);
    if (c.problem.empty() && c.backend.empty()) {
      c.problem = "file name is not libxhal-<backend>.so";
    }
    list_.push_back(std::move(c));
  }
  void add_folder(const fs::path& folder) {
    for (const fs::path& file : plugin_files_in(folder)) add(file);
  }
  std::vector<PluginCandidate> take() { return std::move(list_); }

 private:
  std::vector<fs::path> seen_;
  std::vector<PluginCandidate> list_;
};

}  // namespace

std::string backend_from_file_name(const std::string& file_name) {
  const std::string_view name = file_name;
  if (name.size() <= kPrefix.size() + kSuffix.size()) return "";
  if (!name.starts_with(kPrefix) || !name.ends_with(kSuffix)) return "";
  const std::string_view backend =
      name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size());
  const bool ok = std::all_of(backend.begin(), backend.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
  return ok ? std::string(backend) : "";
}

std::vector<PluginCandidate> find_plugin_candidates(const std::string& path_list,
                                                    bool path_list_only) {
  CandidateList list;
  size_t start = 0;
  while (start <= path_list.size()) {
    size_t end = path_list.find(':', start);
    if (end == std::string::npos) end = path_list.size();
    const std::string entry = path_list.substr(start, end - start);
    start = end + 1;
    if (entry.empty()) continue;
    std::error_code ec;
    const fs::file_status status = fs::status(entry, ec);
    if (fs::is_directory(status)) {
      list.add_folder(entry);
    } else if (fs::exists(status)) {
      list.add(entry);  // a file named explicitly is a candidate whatever its name
    } else {
      list.add(entry, "plugin path entry does not exist");
    }
  }
  if (!path_list_only) {
    const fs::path here = libxhal_folder();
    if (!here.empty()) {
      list.add_folder(here / "xhal" / "plugins");
      list.add_folder(here);
    }
  }
  return list.take();
}

}  // namespace xhal
