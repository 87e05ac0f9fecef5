// Checks that an xhal-conformance JSON report has the documented schema
// (docs/conformance.md) and at least one passing result per device. Used by
// ctest after the cpu run. Usage: xhal-conformance-report-check FILE
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace {
int errors = 0;
void bad(const std::string& what) {
  std::fprintf(stderr, "report: %s\n", what.c_str());
  ++errors;
}
bool has_string(const nlohmann::json& o, const char* key, const std::string& where) {
  if (!o.contains(key) || !o[key].is_string()) {
    bad(where + ": missing string field '" + key + "'");
    return false;
  }
  return true;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s REPORT.json\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::fprintf(stderr, "cannot open %s\n", argv[1]);
    return 2;
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "not JSON: %s\n", e.what());
    return 1;
  }
  const std::set<std::string> statuses = {
      "pass", "fail", "unsupported", "skipped", "expected-failure", "unexpected-pass"};
  const std::set<std::string> levels = {"bit-exact", "accurate", "none"};
  has_string(j, "xhal_version", "top level");
  has_string(j, "date", "top level");
  for (const char* key : {"devices", "results", "ops"})
    if (!j.contains(key) || !j[key].is_array())
      bad(std::string("top level: missing array '") + key + "'");
  if (errors) return 1;

  std::set<std::string> device_names;
  for (const auto& d : j["devices"]) {
    for (const char* k : {"name", "device_name", "backend", "stable_id", "plugin_path",
                          "plugin_version", "verdict"})
      has_string(d, k, "device");
    if (d.contains("name") && d["name"].is_string()) {
      if (!device_names.insert(d["name"]).second)
        bad("device " + d["name"].get<std::string>() + " has two sections");
    }
  }
  if (device_names.empty()) bad("no device listed");

  std::set<std::string> devices_with_pass, ops_seen;
  for (const auto& r : j["results"]) {
    std::string where = "result " + r.value("test", std::string("?"));
    for (const char* k : {"test", "device", "status", "message"}) has_string(r, k, where);
    std::string status = r.value("status", std::string());
    if (!statuses.count(status))
      bad(where + ": status '" + status + "' is not one of the documented values");
    if (r.contains("level") && !levels.count(r["level"].get<std::string>()))
      bad(where + ": bad level");
    if (r.contains("op") && !r["op"].is_string()) bad(where + ": op is not a string");
    std::string device = r.value("device", std::string());
    if (device != "host" && !device_names.count(device))
      bad(where + ": unknown device '" + device + "'");
    if (status == "pass") devices_with_pass.insert(device);
    if (r.contains("op") && r.contains("level"))
      ops_seen.insert(r["op"].get<std::string>() + "@" + device);
  }
  for (const auto& d : device_names)
    if (!devices_with_pass.count(d)) bad("device " + d + " has no passing test");
  for (const auto& o : j["ops"]) {
    for (const char* k : {"op", "device", "level"}) has_string(o, k, "ops entry");
    if (o.contains("level") && !levels.count(o["level"].get<std::string>()))
      bad("ops entry: bad level");
  }
  if (j["ops"].empty() && !ops_seen.empty()) bad("results carry op levels but 'ops' is empty");

  // Each device's section agrees with the results and op levels that name it.
  for (const auto& d : j["devices"]) {
    if (!d.contains("name") || !d["name"].is_string()) continue;
    const std::string name = d["name"];
    const std::string where = "device " + name;
    std::map<std::string, int64_t> counts;
    for (const auto& status : statuses) counts[status] = 0;
    for (const auto& r : j["results"])
      if (r.value("device", std::string()) == name) ++counts[r.value("status", std::string())];
    if (!d.contains("summary") || !d["summary"].is_object()) {
      bad(where + ": missing object 'summary'");
    } else {
      for (const auto& [status, n] : counts) {
        const auto& summary = d["summary"];
        if (!summary.contains(status) || !summary[status].is_number_integer())
          bad(where + ": summary lacks the count '" + status + "'");
        else if (summary[status].get<int64_t>() != n)
          bad(where + ": summary says " + status + "=" + summary[status].dump() + ", the results " +
              std::to_string(n));
      }
      if (d["summary"].size() != statuses.size())
        bad(where + ": summary holds a count that is not a status");
    }
    const std::string verdict = counts["fail"] + counts["unexpected-pass"] > 0    ? "fail"
                                : counts["pass"] + counts["expected-failure"] > 0 ? "pass"
                                                                                  : "none";
    const std::string stated =
        d.contains("verdict") && d["verdict"].is_string() ? d["verdict"] : "";
    if (stated != verdict)
      bad(where + ": verdict '" + stated + "', the results give '" + verdict + "'");
    std::map<std::string, std::string> levels_here;
    for (const auto& o : j["ops"])
      if (o.value("device", std::string()) == name)
        levels_here[o.value("op", std::string())] = o.value("level", std::string());
    if (!d.contains("ops") || !d["ops"].is_object()) {
      bad(where + ": missing object 'ops'");
    } else {
      std::map<std::string, std::string> section;
      for (const auto& [op, level] : d["ops"].items())
        section[op] = level.is_string() ? level.get<std::string>() : level.dump();
      if (section != levels_here)
        bad(where + ": 'ops' differs from the top-level op levels of this device");
    }
  }
  std::printf("report %s: %zu devices, %zu results, %zu op levels, %d problems\n", argv[1],
              device_names.size(), j["results"].size(), j["ops"].size(), errors);
  return errors ? 1 : 0;
}
