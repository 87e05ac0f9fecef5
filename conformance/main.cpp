// xhal-conformance: runs the conformance tests on the selected devices and
// writes the JSON report. Options and exit codes: docs/conformance.md.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <string>
#include <vector>

#include "check.h"
#include "expected_failures.h"
#include "harness.h"
#include "isolation.h"
#include "report.h"
#include "runner.h"

namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitSetup = 2;

struct Options {
  const char* device = nullptr;  // NULL: XHAL_DEVICE
  const char* plugin = nullptr;
  std::string report_path;
  std::string xfail_path;
  bool help = false;
  bool require_bit_exact = false;
  bool isolate = true;
  double test_timeout_s = 600;
  int isolated_child_fd = -1;  // set in the test process of an isolated run
  std::string isolated_skip;
};

const char* kUsage =
    "usage: xhal-conformance [--device SELECTOR] [--plugin PATH] [--report FILE]\n"
    "                        [--require-bit-exact] [--no-isolate] [--test-timeout S]\n"
    "                        [--expected-failures FILE] [--gtest_* ...]\n"
    "  --device SELECTOR         test only the devices matching SELECTOR (grammar of\n"
    "                            XHAL_DEVICE, docs/device-selection.md); default:\n"
    "                            XHAL_DEVICE, else every device\n"
    "  --plugin PATH             load only this plugin file (or folder), as a vendor\n"
    "                            testing its own backend\n"
    "  --report FILE             write the JSON report to FILE\n"
    "  --require-bit-exact       fail op tests that reach only the accurate level\n"
    "  --expected-failures FILE  lines `<test-glob> [device-glob]`; a listed failing\n"
    "                            test does not fail the run, a listed passing one does\n"
    "  --no-isolate              run the tests in this process (default: in a child\n"
    "                            process; a test that crashes it fails, and the rest\n"
    "                            run in a new one)\n"
    "  --test-timeout S          with isolation, a test silent for S seconds fails and\n"
    "                            its process is killed (default 600; 0: no limit)\n"
    "Exit: 0 all passed (or no device), 1 a test failed or an expected failure\n"
    "passed, 2 bad usage or setup (plugin rejected, runtime error, ...).\n";

// --gtest_filter in the report's form: gtest names a device test
// "Devices/Suite.Name/cpu_0", the report and the expected-failures file
// "Suite.Name". Each pattern P without a '/' also gets "Devices/P/*", so
// `--gtest_filter=SoftmaxTest.*` selects the softmax tests on every device
// (docs/conformance.md "Test names"); gtest's own form still works.
std::string filter_in_both_forms(const std::string& filter) {
  std::string out;
  size_t begin = 0;
  bool negative = false;
  while (begin <= filter.size()) {
    size_t end = filter.find_first_of(":-", begin);
    if (end == std::string::npos) end = filter.size();
    const std::string p = filter.substr(begin, end - begin);
    if (!p.empty()) {
      out += p;
      if (p.find('/') == std::string::npos) out += ":Devices/" + p + "/*";
    }
    if (end == filter.size()) break;
    if (filter[end] == '-' && !negative) {
      out += "-";
      negative = true;
    } else if (filter[end] == '-') {
      out += "-";  // a '-' inside the negative part: part of a name, as gtest reads it
    } else {
      out += ":";
    }
    begin = end + 1;
  }
  return out;
}

// Takes our options out of argv, leaving argv[0] and every other argument
// (the --gtest_* flags) for InitGoogleTest. Returns false on bad usage.
bool parse_options(int* argc, char** argv, Options* o) {
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char* name, const char** out) -> int {
      size_t n = std::strlen(name);
      if (a == name) {
        if (i + 1 >= *argc) {
          std::fprintf(stderr, "xhal-conformance: %s needs a value\n", name);
          return -1;
        }
        *out = argv[++i];
        return 1;
      }
      if (a.compare(0, n, name) == 0 && a.size() > n && a[n] == '=') {
        *out = argv[i] + n + 1;
        return 1;
      }
      return 0;
    };
    const char* v = nullptr;
    int r;
    if ((r = value("--device", &o->device)) != 0) {
      if (r < 0) return false;
    } else if ((r = value("--plugin", &o->plugin)) != 0) {
      if (r < 0) return false;
    } else if ((r = value("--report", &v)) != 0) {
      if (r < 0) return false;
      o->report_path = v;
    } else if ((r = value("--expected-failures", &v)) != 0) {
      if (r < 0) return false;
      o->xfail_path = v;
    } else if (a == "--require-bit-exact") {
      o->require_bit_exact = true;
    } else if (a == "--no-isolate") {
      o->isolate = false;
    } else if ((r = value("--test-timeout", &v)) != 0) {
      if (r < 0) return false;
      char* end = nullptr;
      o->test_timeout_s = std::strtod(v, &end);
      if (end == v || *end != '\0' || !(o->test_timeout_s >= 0)) {
        std::fprintf(stderr, "xhal-conformance: --test-timeout '%s' is not a number of seconds\n",
                     v);
        return false;
      }
    } else if ((r = value("--isolated-child", &v)) != 0) {
      if (r < 0) return false;
      o->isolated_child_fd = std::atoi(v);
    } else if ((r = value("--isolated-skip", &v)) != 0) {
      if (r < 0) return false;
      o->isolated_skip = v;
    } else if (a == "--help" || a == "-h") {
      o->help = true;
      argv[kept++] = argv[i];  // gtest prints its flags too
    } else if (a.rfind("--gtest_filter=", 0) == 0 || a.rfind("-gtest_filter=", 0) == 0) {
      static std::list<std::string> rewritten;  // argv points into it until exit
      const size_t eq = a.find('=');
      rewritten.push_back(a.substr(0, eq + 1) + filter_in_both_forms(a.substr(eq + 1)));
      argv[kept++] = rewritten.back().data();
    } else if (a.rfind("--gtest_", 0) == 0 || a.rfind("-gtest_", 0) == 0) {
      argv[kept++] = argv[i];
    } else {
      std::fprintf(stderr, "xhal-conformance: unknown argument '%s'\n%s", argv[i], kUsage);
      return false;
    }
  }
  *argc = kept;
  argv[kept] = nullptr;
  return true;
}

struct PluginCandidates {
  int loaded = 0, rejected = 0, skipped = 0;
  std::string skipped_names;
  uint64_t loaded_devices = 0;
  std::string plugin_rejection;  // reason the --plugin file was rejected
};

PluginCandidates list_plugins(const Options& o, bool print) {
  PluginCandidates s;
  uint32_t n = 0;
  if (xhal_plugin_count(&n) != XHAL_OK) return s;
  for (uint32_t i = 0; i < n; ++i) {
    xhal_plugin_info_t p{};
    p.struct_size = sizeof p;
    if (xhal_plugin_get_info(i, &p) != XHAL_OK) continue;
    const char* state = p.state == XHAL_PLUGIN_LOADED     ? "loaded"
                        : p.state == XHAL_PLUGIN_REJECTED ? "rejected"
                                                          : "skipped";
    if (print)
      std::printf("plugin %-8s %-8s %s%s%s\n", p.backend ? p.backend : "?", state,
                  p.path ? p.path : "?", p.reason && *p.reason ? ": " : "",
                  p.reason ? p.reason : "");
    if (p.state == XHAL_PLUGIN_LOADED) {
      ++s.loaded;
      s.loaded_devices += p.device_count;
    } else if (p.state == XHAL_PLUGIN_SKIPPED) {
      ++s.skipped;
      s.skipped_names +=
          std::string(s.skipped_names.empty() ? "" : ", ") + (p.backend ? p.backend : "?");
    } else if (p.state == XHAL_PLUGIN_REJECTED) {
      ++s.rejected;
      if (o.plugin && s.plugin_rejection.empty())
        s.plugin_rejection = std::string(p.path ? p.path : "?") + ": " + (p.reason ? p.reason : "");
    }
  }
  return s;
}

// The plugin (path, version) that serves `backend`.
void plugin_of(const std::string& backend, xhal::conf::DeviceRecord* d) {
  uint32_t n = 0;
  if (xhal_plugin_count(&n) != XHAL_OK) return;
  for (uint32_t i = 0; i < n; ++i) {
    xhal_plugin_info_t p{};
    p.struct_size = sizeof p;
    if (xhal_plugin_get_info(i, &p) != XHAL_OK || p.state != XHAL_PLUGIN_LOADED) continue;
    if (p.backend && backend == p.backend) {
      d->plugin_path = p.path ? p.path : "";
      d->plugin_version = p.plugin_version ? p.plugin_version : "";
      return;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xhal::conf;
  const std::vector<std::string> original_args(argv, argv + argc);
  Options o;
  if (!parse_options(&argc, argv, &o)) return kExitSetup;
  // The test process of an isolated run: the supervisor prints the setup,
  // the summary and writes the report; this one runs tests and reports back.
  const bool test_process = o.isolated_child_fd >= 0;
  if (o.help) {
    std::printf("%s\nGoogleTest flags are passed through:\n", kUsage);
    ::testing::InitGoogleTest(&argc, argv);
    return kExitOk;
  }

  ExpectedFailures xfail;
  if (!o.xfail_path.empty()) {
    std::string error;
    if (!xfail.load(o.xfail_path, &error)) {
      std::fprintf(stderr, "xhal-conformance: %s\n", error.c_str());
      return kExitSetup;
    }
  }

  xhal_runtime_options_t ro{};
  ro.struct_size = sizeof ro;
  ro.device_selector = o.device;
  ro.plugin_path = o.plugin;
  ro.plugin_path_only = o.plugin ? 1 : 0;
  if (xhal_status_t st = xhal_runtime_init(&ro); st != XHAL_OK) {
    std::fprintf(stderr, "xhal-conformance: runtime init failed (%s): %s\n", xhal_status_name(st),
                 xhal_last_error());
    return kExitSetup;
  }
  PluginCandidates plugins = list_plugins(o, !test_process);

  uint32_t count = 0;
  xhal_status_t st = xhal_device_count(&count);
  if (st != XHAL_OK && st != XHAL_NOT_FOUND) {
    std::fprintf(stderr, "xhal-conformance: device enumeration failed (%s): %s\n",
                 xhal_status_name(st), xhal_last_error());
    return kExitSetup;
  }
  if (st == XHAL_NOT_FOUND) count = 0;

  std::vector<DeviceParam> devices;
  for (uint32_t i = 0; i < count; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    if (xhal_device_get_info(i, &info) != XHAL_OK) {
      std::fprintf(stderr, "xhal-conformance: device %u: %s\n", i, xhal_last_error());
      return kExitSetup;
    }
    DeviceRecord d;
    d.backend = info.backend ? info.backend : "";
    d.name = d.backend + ":" + std::to_string(info.backend_index);
    d.device_name = info.name ? info.name : "";
    d.stable_id = info.stable_id ? info.stable_id : "";
    plugin_of(d.backend, &d);
    if (!test_process)
      std::printf("device %s: %s (%s)\n", d.name.c_str(), d.device_name.c_str(),
                  d.stable_id.c_str());
    devices.push_back(DeviceParam{i, d.name});
    report().add_device(std::move(d));
  }

  if (devices.empty()) {
    // Only "the plugins loaded and have no device" is a clean outcome.
    const char* env = std::getenv("XHAL_DEVICE");
    std::string selector = o.device ? o.device : env ? env : "";
    int code = kExitOk;
    std::string why;
    if (!plugins.plugin_rejection.empty()) {
      why = "the plugin was rejected: " + plugins.plugin_rejection;
      code = kExitSetup;
    } else if (plugins.loaded == 0 && plugins.skipped > 0) {
      why = "the selector '" + selector +
            "' needs none of the plugins found (skipped: " + plugins.skipped_names + ")";
      code = kExitSetup;
    } else if (plugins.loaded == 0) {
      why = "no plugin loaded";
      code = kExitSetup;
    } else if (plugins.loaded_devices > 0) {
      why = "the selector '" + selector + "' matches none of the " +
            std::to_string(plugins.loaded_devices) + " devices";
      code = kExitSetup;
    } else {
      why = "no device: the loaded plugins report 0 devices";
    }
    std::printf("xhal-conformance: nothing to test: %s\n", why.c_str());
    if (!o.report_path.empty() && !report().write_json(o.report_path)) return kExitSetup;
    xhal_runtime_shutdown();
    return code;
  }
  set_selected_devices(std::move(devices));
  set_require_bit_exact(o.require_bit_exact);
  if (!test_process)
    std::printf("data seed base: %llu (XHAL_CONF_SEED=%llu reproduces this run's data)\n",
                static_cast<unsigned long long>(seed_base()),
                static_cast<unsigned long long>(seed_base()));

  ::testing::InitGoogleTest(&argc, argv);
  if (test_process) {
    skip_tests_listed_in(o.isolated_skip);
    report().set_journal(o.isolated_child_fd);
    ::testing::UnitTest::GetInstance()->listeners().Append(new ReportListener(&xfail));
    // The verdicts reach the parent through the journal, not the status.
    [[maybe_unused]] const int rc = RUN_ALL_TESTS();
    report().journal_finished(::testing::UnitTest::GetInstance()->ad_hoc_test_result().Failed());
    xhal_runtime_shutdown();
    return kExitOk;
  }
  // Listing tests or repeating them is left to gtest in this process.
  const bool isolate = o.isolate && !GTEST_FLAG_GET(list_tests) && GTEST_FLAG_GET(repeat) == 1;
  int gtest_rc = 0;
  bool ad_hoc_failed = false;
  if (isolate) {
    // The devices are opened by the test processes; this one holds none.
    xhal_runtime_shutdown();
    setenv("XHAL_CONF_SEED", std::to_string(seed_base()).c_str(), 1);
    std::string error;
    if (!run_isolated({original_args, o.test_timeout_s}, xfail, &ad_hoc_failed, &error)) {
      std::fprintf(stderr, "xhal-conformance: %s\n", error.c_str());
      report().print_summary();
      if (!o.report_path.empty()) report().write_json(o.report_path);
      return kExitSetup;
    }
  } else {
    ::testing::UnitTest::GetInstance()->listeners().Append(new ReportListener(&xfail));
    gtest_rc = RUN_ALL_TESTS();
    ad_hoc_failed = ::testing::UnitTest::GetInstance()->ad_hoc_test_result().Failed();
  }

  report().settle_glob_entries(xfail);
  bool failed = report().failed() || ad_hoc_failed;
  report().print_summary();
  const bool any_expected_failure =
      std::any_of(report().records().begin(), report().records().end(),
                  [](const TestRecord& r) { return r.status == "expected-failure"; });
  if ((gtest_rc != 0 || any_expected_failure) && !failed)
    std::printf("(gtest's FAILED lines above are expected failures listed in %s)\n",
                xfail.source.c_str());
  int code = failed ? kExitFailed : kExitOk;
  if (!o.report_path.empty() && !report().write_json(o.report_path)) code = kExitSetup;
  xhal_runtime_shutdown();
  std::printf("xhal-conformance: %s (exit %d)\n", code == kExitOk ? "PASSED" : "FAILED", code);
  return code;
}
