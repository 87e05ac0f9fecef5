// Loading one plugin candidate: dlopen, entry symbol, table checks, init.
#pragma once

#include <vector>

#include "plugin_search.h"
#include "runtime_state.h"

namespace xhal {

// Loads `candidate` (unless `loaded` already has its backend) and returns its
// record: LOADED with the plugin and its devices counted, or REJECTED with a
// specific reason. Never throws; never leaves the library loaded on rejection.
PluginRecord load_plugin(const PluginCandidate& candidate,
                         const std::vector<PluginRecord>& earlier);

// Calls the plugin's shutdown and, if `unload`, unloads the library. At
// process exit the library stays mapped: unmapping gains nothing then, and
// libraries it pulled in (an OpenMP runtime) may not survive being unloaded
// while their thread-local state is still live.
void unload_plugin(PluginRecord& record, bool unload);

}  // namespace xhal
