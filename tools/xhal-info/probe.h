// xhal-info --probe: loads each plugin candidate in a child process, so that
// a plugin that crashes or hangs the process (SIGSEGV in init, an endless
// wait) is named instead of taking the caller down.
#pragma once

#include <string>

namespace xhal_info {

struct ProbeOptions {
  std::string plugin_path;  // as --plugin-path (empty: $XHAL_PLUGIN_PATH)
  bool plugin_path_only = false;
  double timeout_s = 10;
  bool json = false;
};

// Lists the candidates without running any plugin code, probes each in a
// child (this program re-executed with --probe-one) and prints one verdict
// per candidate. Returns the exit status: 0 every candidate loaded, 1 one was
// rejected, crashed or hung, 2 the candidates could not be listed.
int probe_all(const ProbeOptions& options);

// The child's side (hidden option --probe-one PATH): starts the runtime on
// that one file and prints its outcome as one JSON line. Returns 0.
int probe_one(const std::string& path);

}  // namespace xhal_info
