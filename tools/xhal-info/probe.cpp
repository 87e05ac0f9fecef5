#include "probe.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "xhal/xhal.h"

namespace xhal_info {
namespace {

using nlohmann::ordered_json;

// Marks the child's one line of result among whatever the plugin prints.
constexpr const char* kResultTag = "xhal-info-probe-result: ";
// A selector no backend needs: the listing loads no plugin, so none of their
// code runs in this process. (A plugin really named like this would load.)
constexpr const char* kListOnlySelector = "xhal-info-probe-lists-only";

struct Candidate {
  std::string path, backend, reason;
  xhal_plugin_state_t state = XHAL_PLUGIN_REJECTED;
};

struct Verdict {
  std::string kind;  // ok | rejected | crashed | hung
  std::string text;  // "ok (2 devices)", "crashed: SIGSEGV", ...
  std::optional<uint32_t> devices;
  std::string signal;  // "SIGSEGV" when a signal ended the child
};

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::optional<std::vector<Candidate>> list_candidates(const ProbeOptions& o, std::string* error) {
  xhal_runtime_options_t options{};
  options.struct_size = sizeof(options);
  options.device_selector = kListOnlySelector;
  options.plugin_path = o.plugin_path.empty() ? nullptr : o.plugin_path.c_str();
  options.plugin_path_only = o.plugin_path_only ? 1 : 0;
  if (xhal_runtime_init(&options) != XHAL_OK) {
    *error = xhal_last_error();
    return std::nullopt;
  }
  std::vector<Candidate> list;
  uint32_t count = 0;
  if (xhal_plugin_count(&count) == XHAL_OK) {
    for (uint32_t i = 0; i < count; ++i) {
      xhal_plugin_info_t info{};
      info.struct_size = sizeof(info);
      if (xhal_plugin_get_info(i, &info) != XHAL_OK) continue;
      list.push_back({info.path, info.backend, info.reason, info.state});
    }
  }
  xhal_runtime_shutdown();
  return list;
}

// What the child's JSON line says.
Verdict verdict_from_result(const std::string& line) {
  Verdict v;
  try {
    const auto j = nlohmann::json::parse(line);
    const std::string state = j.value("state", "");
    const std::string reason = j.value("reason", "");
    if (state == "loaded") {
      const uint32_t n = j.value("device_count", 0u);
      v.kind = "ok";
      v.devices = n;
      v.text = "ok (" + std::to_string(n) + (n == 1 ? " device" : " devices") +
               (reason.empty() ? "" : ": " + reason) + ")";
    } else {
      v.kind = "rejected";
      v.text = "rejected: " + (reason.empty() ? j.value("error", std::string("?")) : reason);
    }
  } catch (const std::exception& e) {
    v.kind = "crashed";
    v.text = std::string("crashed: unreadable result (") + e.what() + ")";
  }
  return v;
}

// The probe itself failed (counted as not ok).
Verdict not_probed(const std::string& why) {
  Verdict v;
  v.kind = "crashed";
  v.text = "not probed: " + why;
  return v;
}

// Runs `self --probe-one path` with a deadline and reads its verdict.
Verdict probe_in_child(const std::string& path, double timeout_s) {
  int out[2];
  if (pipe(out) != 0) return not_probed(std::string("pipe: ") + std::strerror(errno));
  const pid_t child = fork();
  if (child < 0) {
    close(out[0]);
    close(out[1]);
    return not_probed(std::string("fork: ") + std::strerror(errno));
  }
  // The child stays in this process group, so that Ctrl-C stops it too.
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    close(out[1]);
    const char* argv[] = {"xhal-info", "--probe-one", path.c_str(), nullptr};
    execv("/proc/self/exe", const_cast<char* const*>(argv));
    _exit(127);
  }
  close(out[1]);

  using clock = std::chrono::steady_clock;
  const auto deadline =
      clock::now() + std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  std::string output;
  bool open = true, exited = false, timed_out = false;
  int status = 0;
  while (!exited) {
    if (open) {
      pollfd p{out[0], POLLIN, 0};
      if (poll(&p, 1, 50) > 0) {
        char chunk[4096];
        const ssize_t n = read(out[0], chunk, sizeof(chunk));
        if (n > 0) {
          output.append(chunk, static_cast<size_t>(n));
        } else if (n == 0 || errno != EINTR) {
          open = false;
        }
      }
    } else {
      usleep(20 * 1000);
    }
    if (waitpid(child, &status, WNOHANG) == child) {
      exited = true;
    } else if (clock::now() > deadline) {
      kill(child, SIGKILL);
      waitpid(child, &status, 0);
      exited = timed_out = true;
    }
  }
  // Whatever the child wrote before it ended. Without waiting: a process the
  // plugin started may hold the pipe open for ever.
  for (pollfd p{out[0], POLLIN, 0}; open && poll(&p, 1, 0) > 0;) {
    char chunk[4096];
    const ssize_t n = read(out[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    output.append(chunk, static_cast<size_t>(n));
  }
  close(out[0]);

  std::optional<std::string> result;
  if (const size_t at = output.rfind(kResultTag); at != std::string::npos) {
    const size_t from = at + std::strlen(kResultTag);
    result = output.substr(from, output.find('\n', from) - from);
  }
  Verdict v;
  if (timed_out) {
    v.kind = "hung";
    v.text = "hung (timeout " + seconds_text(timeout_s) + "s)";
    if (result) v.text += " after loading: " + verdict_from_result(*result).text;
    return v;
  }
  if (WIFSIGNALED(status)) {
    v.signal = signal_name(WTERMSIG(status));
    if (result) {
      // It loaded, then died in shutdown or at exit.
      v = verdict_from_result(*result);
      v.signal = signal_name(WTERMSIG(status));
      v.kind = "crashed";
      v.text += ", then crashed when shut down: " + v.signal;
      return v;
    }
    v.kind = "crashed";
    v.text = "crashed: " + v.signal;
    return v;
  }
  const int code = WEXITSTATUS(status);
  if (!result) {
    v.kind = "crashed";
    v.text = code == 127
                 ? "not probed: cannot re-run /proc/self/exe"
                 : "crashed: exited with status " + std::to_string(code) + " before reporting";
    return v;
  }
  v = verdict_from_result(*result);
  if (code != 0) {
    v.kind = "crashed";
    v.text += ", then exited with status " + std::to_string(code);
  }
  return v;
}

}  // namespace

int probe_one(const std::string& path) {
  xhal_runtime_options_t options{};
  options.struct_size = sizeof(options);
  options.device_selector = "";  // every device, whatever XHAL_DEVICE says
  options.plugin_path = path.c_str();
  options.plugin_path_only = 1;
  ordered_json result;
  if (xhal_runtime_init(&options) != XHAL_OK) {
    result = {{"state", "error"}, {"error", xhal_last_error()}};
  } else {
    xhal_plugin_info_t info{};
    info.struct_size = sizeof(info);
    if (xhal_plugin_get_info(0, &info) != XHAL_OK) {
      result = {{"state", "error"}, {"error", xhal_last_error()}};
    } else {
      result = {{"state", info.state == XHAL_PLUGIN_LOADED ? "loaded" : "rejected"},
                {"reason", info.reason},
                {"device_count", info.device_count}};
    }
  }
  std::cout << kResultTag << result.dump() << std::endl;
  // Shutting down here (not only at exit) makes a crash in shutdown visible.
  xhal_runtime_shutdown();
  return 0;
}

int probe_all(const ProbeOptions& o) {
  std::string error;
  const auto candidates = list_candidates(o, &error);
  if (!candidates) {
    std::cerr << "xhal-info: " << error << "\n";
    return 2;
  }
  bool all_ok = true;
  ordered_json list = ordered_json::array();
  if (!o.json) {
    std::cout << "Probing " << candidates->size() << " plugin candidate"
              << (candidates->size() == 1 ? "" : "s")
              << " (each loaded alone in a child process, timeout " << seconds_text(o.timeout_s)
              << "s):\n";
    if (candidates->empty()) std::cout << "  none found\n";
  }
  for (const Candidate& c : *candidates) {
    Verdict v;
    if (c.state == XHAL_PLUGIN_REJECTED) {
      // Rejected before any of its code could run (not a regular file, ...).
      v.kind = "rejected";
      v.text = "rejected: " + c.reason;
    } else {
      v = probe_in_child(c.path, o.timeout_s);
    }
    all_ok = all_ok && v.kind == "ok";
    if (o.json) {
      ordered_json j = {
          {"path", c.path}, {"backend", c.backend}, {"verdict", v.kind}, {"summary", v.text}};
      j["device_count"] = v.devices ? ordered_json(*v.devices) : ordered_json();
      j["signal"] = v.signal.empty() ? ordered_json() : ordered_json(v.signal);
      list.push_back(std::move(j));
    } else {
      std::cout << "  " << c.path << ": " << v.text << "\n";
    }
  }
  if (o.json) {
    uint32_t major = 0, minor = 0, patch = 0;
    xhal_version(&major, &minor, &patch);
    std::cout << ordered_json{{"xhal_version", std::to_string(major) + "." + std::to_string(minor) +
                                                   "." + std::to_string(patch)},
                              {"probe_timeout_s", o.timeout_s},
                              {"plugins", list}}
                     .dump(2)
              << "\n";
  }
  return all_ok ? 0 : 1;
}

}  // namespace xhal_info
