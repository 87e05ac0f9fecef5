// Libraries a plugin pulls in (an OpenMP runtime, libcuda, a Vulkan ICD) stay
// loaded after the plugin itself is unloaded: such runtimes are not built to
// be unmapped while their thread-local state lives, nor to be loaded twice.
#pragma once

#include <string>
#include <vector>

namespace xhal {

// Paths of the shared objects mapped into the process now.
std::vector<std::string> mapped_objects();

// Marks every object mapped now but absent from `before` as never to be
// unloaded, except the plugin at `plugin_path` itself.
void keep_new_dependencies_resident(const std::vector<std::string>& before,
                                    const std::string& plugin_path);

}  // namespace xhal
