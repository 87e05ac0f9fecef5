// Checks that an xhal-conformance JSON report has the documented schema
// (docs/conformance.md) and at least one passing result per device. Used by
// ctest after the cpu run. Usage: xhal-conformance-report-check FILE
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "xhal/device.h"

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

// Levels and op verdicts from worst to best.
int level_rank(const std::string& level) {
  return level == "bit-exact" ? 2 : level == "accurate" ? 1 : 0;
}
const std::vector<std::string>& op_verdict_names() {
  static const std::vector<std::string> v = {"fail", "expected-failure", "pass", "unsupported",
                                             "untested"};
  return v;
}
int verdict_rank(const std::string& verdict) {
  const auto& v = op_verdict_names();
  for (size_t i = 0; i < v.size(); ++i)
    if (v[i] == verdict) return static_cast<int>(i);
  return static_cast<int>(v.size());
}
// Every op of xhal_op_t, by the name the report uses.
const std::vector<std::string>& all_ops() {
  static const std::vector<std::string> ops = [] {
    std::vector<std::string> v;
    for (int op = 0; op < XHAL_OP_COUNT_; ++op)
      v.push_back(xhal_op_name(static_cast<xhal_op_t>(op)));
    return v;
  }();
  return ops;
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
  // Each device's op verdicts follow from its results (docs/conformance.md
  // "Op verdicts"): every op, exactly one verdict.
  std::map<std::string, std::map<std::string, std::pair<std::string, std::string>>> verdicts_of;
  for (const auto& d : j["devices"]) {
    if (!d.contains("name") || !d["name"].is_string()) continue;
    const std::string name = d["name"];
    const std::string where = "device " + name;
    std::map<std::string, std::set<std::string>> statuses_of;  // op -> statuses
    std::map<std::string, std::string> lowest;                 // op -> lowest passing level
    for (const auto& r : j["results"]) {
      if (r.value("device", std::string()) != name || !r.contains("op") || !r["op"].is_string())
        continue;
      const std::string op = r["op"], status = r.value("status", std::string());
      statuses_of[op].insert(status);
      if (status == "pass" && r.contains("level") && r["level"].is_string()) {
        const std::string level = r["level"];
        std::string& low = lowest[op];
        if (low.empty() || level_rank(level) < level_rank(low)) low = level;
      }
    }
    if (!d.contains("op_verdicts") || !d["op_verdicts"].is_object()) {
      bad(where + ": missing object 'op_verdicts'");
      continue;
    }
    const auto& ov = d["op_verdicts"];
    for (const auto& op : all_ops()) {
      const auto& st = statuses_of[op];
      const std::string want = st.count("fail") || st.count("unexpected-pass") ? "fail"
                               : st.count("expected-failure")                  ? "expected-failure"
                               : st.count("pass")                              ? "pass"
                               : st.count("unsupported")                       ? "unsupported"
                                                                               : "untested";
      const std::string want_level =
          want == "pass" ? (lowest[op].empty() ? "none" : lowest[op]) : "";
      verdicts_of[name][op] = {want, want_level};
      if (!ov.contains(op) || !ov[op].is_object()) {
        bad(where + ": op_verdicts lacks '" + op + "'");
        continue;
      }
      const std::string got = ov[op].value("verdict", std::string());
      const std::string got_level = ov[op].value("level", std::string());
      if (got != want || got_level != want_level)
        bad(where + ": op " + op + " is '" + got + (got_level.empty() ? "" : " " + got_level) +
            "', its results give '" + want + (want_level.empty() ? "" : " " + want_level) + "'");
    }
    if (ov.size() != all_ops().size()) bad(where + ": op_verdicts names an op xhal does not have");
  }

  // Each plugin section merges the verdicts of its devices; every op is under
  // exactly one verdict.
  if (!j.contains("plugins") || !j["plugins"].is_array()) {
    bad("top level: missing array 'plugins'");
  } else {
    std::set<std::string> covered;
    for (const auto& p : j["plugins"]) {
      const std::string where = "plugin " + p.value("backend", std::string("?"));
      for (const char* k : {"backend", "plugin_path", "plugin_version", "verdict"})
        has_string(p, k, where);
      if (!p.contains("devices") || !p["devices"].is_array() || p["devices"].empty()) {
        bad(where + ": missing array 'devices'");
        continue;
      }
      std::map<std::string, std::pair<std::string, std::string>> merged;
      std::string verdict = "none";
      for (const auto& dn : p["devices"]) {
        const std::string name = dn.is_string() ? dn.get<std::string>() : "";
        if (!verdicts_of.count(name) || !covered.insert(name).second) {
          bad(where + ": device '" + name + "' has no section or belongs to two plugins");
          continue;
        }
        for (const auto& d : j["devices"])
          if (d.value("name", std::string()) == name && d.contains("backend") &&
              d["backend"] != p["backend"])
            bad(where + ": device " + name + " is of backend " + d["backend"].dump());
        for (const auto& [op, v] : verdicts_of[name]) {
          if (!merged.count(op)) {
            merged[op] = v;
          } else if (merged[op].first == "pass" && v.first == "pass") {
            if (level_rank(v.second) < level_rank(merged[op].second)) merged[op].second = v.second;
          } else if (verdict_rank(v.first) < verdict_rank(merged[op].first)) {
            merged[op] = v;
          }
        }
        for (const auto& d : j["devices"])
          if (d.value("name", std::string()) == name) {
            const std::string dv = d.value("verdict", std::string());
            if (dv == "fail" || verdict == "fail") verdict = "fail";
            else if (dv == "pass" || verdict == "pass") verdict = "pass";
          }
      }
      if (p.value("verdict", std::string()) != verdict)
        bad(where + ": verdict '" + p.value("verdict", std::string()) + "', its devices give '" +
            verdict + "'");
      if (!p.contains("ops") || !p["ops"].is_object()) {
        bad(where + ": missing object 'ops'");
        continue;
      }
      const auto& ops = p["ops"];
      std::map<std::string, std::pair<std::string, std::string>> listed;
      for (const auto& v : op_verdict_names()) {
        if (!ops.contains(v)) {
          bad(where + ": ops lacks '" + v + "'");
          continue;
        }
        if (v == "pass") {
          if (!ops[v].is_object()) bad(where + ": ops.pass is not an object");
          else
            for (const auto& [op, level] : ops[v].items())
              if (!listed
                       .emplace(
                           op, std::make_pair(v, level.is_string() ? level.get<std::string>() : ""))
                       .second)
                bad(where + ": op " + op + " listed twice");
        } else if (!ops[v].is_array()) {
          bad(where + ": ops." + v + " is not an array");
        } else {
          for (const auto& op : ops[v])
            if (!op.is_string() ||
                !listed.emplace(op.get<std::string>(), std::make_pair(v, std::string())).second)
              bad(where + ": op " + op.dump() + " listed twice");
        }
      }
      if (listed != merged)
        bad(where + ": its ops by verdict differ from the verdicts of its devices");
    }
    if (covered.size() != device_names.size()) bad("plugins: not every device belongs to a plugin");
  }

  std::printf("report %s: %zu devices, %zu results, %zu op levels, %d problems\n", argv[1],
              device_names.size(), j["results"].size(), j["ops"].size(), errors);
  return errors ? 1 : 0;
}
