#include "plugin_search.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <boost/dll/runtime_symbol_info.hpp>

namespace xhal {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kPrefix = "libxhal-";
constexpr std::string_view kSuffix = ".so";

const char* file_type_name(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISFIFO(mode)) return "fifo";
  if (S_ISSOCK(mode)) return "socket";
  if (S_ISCHR(mode)) return "character device";
  if (S_ISBLK(mode)) return "block device";
  return "unknown file type";
}

// What stat(2) (which follows symlinks) says about `path`: "" for a regular
// file, else why it cannot be a plugin. Nothing is opened: dlopen of a FIFO
// would block for ever (with the runtime lock held), and a device file may
// do anything when opened.
std::string not_a_regular_file(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    const int error = errno;
    if (error == ELOOP) return std::string("symlink loop (") + std::strerror(error) + ")";
    if (error == ENOENT) return "dangling symlink (its target does not exist)";
    return std::string("cannot stat the file: ") + std::strerror(error);
  }
  if (S_ISREG(st.st_mode)) return "";
  return std::string("not a regular file (") + file_type_name(st.st_mode) + ")";
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
  // Every libxhal-*.so of `folder`, by name. A folder that does not exist
  // is fine when `may_be_absent` (the default folders); one that cannot be
  // read becomes a candidate of its own, rejected with the error, so that
  // xhal-info shows why its plugins are missing.
  void add_folder(const fs::path& folder, bool may_be_absent) {
    std::vector<std::string> names;
    // opendir rather than std::filesystem: its error_code overloads are
    // noexcept yet allocate, so running out of memory there terminates.
    DIR* dir = ::opendir(folder.c_str());
    if (dir == nullptr) {
      const int error = errno;
      if (may_be_absent && error == ENOENT) return;
      add(folder, std::string("plugin folder cannot be read: ") + std::strerror(error));
      return;
    }
    struct Closer {
      DIR* dir;
      ~Closer() { ::closedir(dir); }
    } closer{dir};
    for (;;) {
      errno = 0;
      const dirent* entry = ::readdir(dir);
      if (entry == nullptr) {
        // Whatever was listed before a failed step is still worth loading.
        if (errno != 0) {
          add(folder, std::string("plugin folder cannot be read: ") + std::strerror(errno));
        }
        break;
      }
      if (backend_from_file_name(entry->d_name).empty()) continue;
      names.emplace_back(entry->d_name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
      const fs::path file = folder / name;
      add(file, not_a_regular_file(file));
    }
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
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
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
    struct stat st {};
    if (::stat(entry.c_str(), &st) != 0) {
      const int error = errno;
      if (error == ENOENT) {
        list.add(entry, "plugin path entry does not exist");
      } else if (error == ELOOP) {
        list.add(entry, std::string("symlink loop (") + std::strerror(error) + ")");
      } else {
        list.add(entry, std::string("plugin path entry cannot be read: ") + std::strerror(error));
      }
    } else if (S_ISDIR(st.st_mode)) {
      list.add_folder(entry, /*may_be_absent=*/false);
    } else {
      // A file named explicitly is a candidate whatever its name, but only
      // a regular file is ever opened.
      list.add(entry, not_a_regular_file(entry));
    }
  }
  if (!path_list_only) {
    const fs::path here = libxhal_folder();
    if (!here.empty()) {
      list.add_folder(here / "xhal" / "plugins", /*may_be_absent=*/true);
      list.add_folder(here, /*may_be_absent=*/true);
    }
  }
  return list.take();
}

}  // namespace xhal
