// Where plugin files are looked for, in order (docs/abi.md, "Discovery").
#pragma once

#include <string>
#include <vector>

namespace xhal {

struct PluginCandidate {
  std::string path;
  std::string backend;  // from the file name; "" when it does not fit
  std::string problem;  // non-empty: rejected before loading (why)
};

// XHAL_PLUGIN_PATH-style list (`path_list`, may be empty) first, then unless
// `path_list_only`: <folder of libxhal>/xhal/plugins, then the folder of
// libxhal. Each file appears once (first occurrence wins).
std::vector<PluginCandidate> find_plugin_candidates(const std::string& path_list,
                                                    bool path_list_only);

// "cpu" for ".../libxhal-cpu.so"; "" when the name is not libxhal-<name>.so.
std::string backend_from_file_name(const std::string& file_name);

}  // namespace xhal
