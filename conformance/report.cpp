#include "report.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>

#include <unistd.h>

#include <nlohmann/json.hpp>

namespace xhal::conf {

namespace {

constexpr size_t kMaxMessage = 4000;  // keeps the report readable
const char* const kStatuses[] = {
    "pass", "fail", "unsupported", "skipped", "expected-failure", "unexpected-pass"};

// "Devices/BufferTest" + "RoundTrip/cpu_0" -> "BufferTest.RoundTrip".
std::string plain_test_name(const ::testing::TestInfo& info) {
  std::string suite = info.test_suite_name();
  std::string name = info.name();
  if (info.value_param() != nullptr) {
    if (auto slash = suite.find('/'); slash != std::string::npos) suite.erase(0, slash + 1);
    if (auto slash = name.rfind('/'); slash != std::string::npos) name.resize(slash);
  }
  return suite + "." + name;
}

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace

const char* level_name(Level level) {
  switch (level) {
    case Level::kBitExact:
      return "bit-exact";
    case Level::kAccurate:
      return "accurate";
    case Level::kNone:
      break;
  }
  return "none";
}

const char* op_name(xhal_op_t op) { return xhal_op_name(op); }

namespace {

// The op verdicts from worst to best.
const char* const kOpVerdicts[] = {"fail", "expected-failure", "pass", "unsupported", "untested"};

int verdict_rank(const std::string& verdict) {
  for (int i = 0; i < 5; ++i)
    if (verdict == kOpVerdicts[i]) return i;
  return 4;
}

}  // namespace

OpVerdict merge_op_verdicts(const OpVerdict& a, const OpVerdict& b) {
  if (a.verdict == "pass" && b.verdict == "pass") return {"pass", std::min(a.level, b.level)};
  return verdict_rank(a.verdict) <= verdict_rank(b.verdict) ? a : b;
}

OpVerdicts Report::op_verdicts(const std::string& device) const {
  struct Seen {
    bool fail = false, expected = false, pass = false, unsupported = false;
    std::optional<Level> level;  // lowest over the passing tests that measured one
  };
  std::map<xhal_op_t, Seen> seen;
  for (const auto& r : records_) {
    if (r.device != device || !r.op) continue;
    Seen& s = seen[*r.op];
    if (r.status == "fail" || r.status == "unexpected-pass") {
      s.fail = true;
    } else if (r.status == "expected-failure") {
      s.expected = true;
    } else if (r.status == "pass") {
      s.pass = true;
      if (r.level && (!s.level || *r.level < *s.level)) s.level = r.level;
    } else if (r.status == "unsupported") {
      s.unsupported = true;
    }
  }
  OpVerdicts v;
  for (int i = 0; i < XHAL_OP_COUNT_; ++i) {
    const auto op = static_cast<xhal_op_t>(i);
    const Seen s = seen.count(op) ? seen[op] : Seen{};
    OpVerdict& out = v[op];
    out.verdict = s.fail          ? "fail"
                  : s.expected    ? "expected-failure"
                  : s.pass        ? "pass"
                  : s.unsupported ? "unsupported"
                                  : "untested";
    out.level = s.level.value_or(Level::kNone);
  }
  return v;
}

Report& report() {
  static Report r;
  return r;
}

void Report::begin(const ::testing::TestInfo& info) {
  pending_ = TestRecord{};
  pending_.test = plain_test_name(info);
  pending_.device = "host";  // DeviceTest::SetUp names the device
  current_ = &pending_;
  if (journal_fd_ >= 0) {
    // The device as the parameter prints it (PrintTo): known before SetUp,
    // so a crash in SetUp is still charged to the right device.
    const char* param = info.value_param();
    journal(nlohmann::json{{"event", "start"},
                           {"name", std::string(info.test_suite_name()) + "." + info.name()},
                           {"test", pending_.test},
                           {"device", param ? param : "host"}}
                .dump());
  }
}

void Report::note_op(xhal_op_t op) {
  if (journal_fd_ >= 0)
    journal(nlohmann::json{{"event", "op"}, {"op", static_cast<int>(op)}}.dump());
}

void Report::journal_finished(bool ad_hoc_failed) {
  if (journal_fd_ >= 0)
    journal(nlohmann::json{{"event", "finished"}, {"ad_hoc_failed", ad_hoc_failed}}.dump());
}

void Report::journal(const std::string& line) const {
  std::string text = line + "\n";
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(journal_fd_, p, left);
    if (n <= 0) return;  // the supervisor is gone; nothing to tell
    p += n;
    left -= static_cast<size_t>(n);
  }
}

void Report::add_died(const std::string& test, const std::string& gtest_name,
                      const std::string& device, std::optional<xhal_op_t> op,
                      const std::string& message, const ExpectedFailures& xfail) {
  TestRecord r;
  r.test = test;
  r.device = device;
  r.op = op;
  r.message = message;
  if (const ExpectedFailures::Entry* expected = xfail.match(r.test, r.device, gtest_name)) {
    r.xfail_line = expected->line;
    r.status = "expected-failure";
    r.message = "expected failure (" + xfail.source + ":" + std::to_string(expected->line) +
                "): " + r.message;
  } else {
    r.status = "fail";
  }
  if (r.op) r.level = Level::kNone;
  records_.push_back(std::move(r));
}

std::string record_to_json(const TestRecord& r) {
  nlohmann::json j = {{"test", r.test},
                      {"device", r.device},
                      {"unsupported", r.unsupported},
                      {"status", r.status},
                      {"message", r.message},
                      {"seed_count", r.seed_count},
                      {"xfail_line", r.xfail_line}};
  if (r.op) j["op"] = static_cast<int>(*r.op);
  if (r.level) j["level"] = static_cast<int>(*r.level);
  return j.dump();
}

TestRecord record_from_json(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text);
  TestRecord r;
  r.test = j.at("test").get<std::string>();
  r.device = j.at("device").get<std::string>();
  r.unsupported = j.at("unsupported").get<bool>();
  r.status = j.at("status").get<std::string>();
  r.message = j.at("message").get<std::string>();
  r.seed_count = j.at("seed_count").get<uint64_t>();
  r.xfail_line = j.value("xfail_line", 0);
  if (j.contains("op")) r.op = static_cast<xhal_op_t>(j["op"].get<int>());
  if (j.contains("level")) r.level = static_cast<Level>(j["level"].get<int>());
  return r;
}

void Report::add_failure_text(const std::string& text) {
  if (!current_) return;
  std::string& m = current_->message;
  if (m.size() >= kMaxMessage) return;
  if (!m.empty()) m += "\n";
  m += text.substr(0, kMaxMessage - std::min(kMaxMessage, m.size()));
}

void Report::end(const ::testing::TestInfo& info, const ExpectedFailures& xfail) {
  TestRecord r = std::move(pending_);
  current_ = nullptr;
  const ::testing::TestResult& result = *info.result();
  const ExpectedFailures::Entry* expected =
      xfail.match(r.test, r.device, std::string(info.test_suite_name()) + "." + info.name());
  if (expected) r.xfail_line = expected->line;
  if (result.Failed()) {
    r.status = expected ? "expected-failure" : "fail";
    if (expected)
      r.message = "expected failure (" + xfail.source + ":" + std::to_string(expected->line) +
                  "): " + r.message;
  } else if (result.Skipped()) {
    r.status = r.unsupported ? "unsupported" : "skipped";
  } else if (expected && !expected->is_glob()) {
    r.status = "unexpected-pass";
    r.message = "passed, but listed as an expected failure at " + xfail.source + ":" +
                std::to_string(expected->line) + "; remove the entry";
  } else {
    r.status = "pass";
  }
  // A failed test demonstrated no level for its op.
  if (r.status != "pass" && r.status != "unexpected-pass" && r.op) r.level = Level::kNone;
  if (journal_fd_ >= 0) {
    journal("{\"event\":\"end\",\"name\":" +
            nlohmann::json(std::string(info.test_suite_name()) + "." + info.name()).dump() +
            ",\"record\":" + record_to_json(r) + "}");
  }
  records_.push_back(std::move(r));
}

void Report::settle_glob_entries(const ExpectedFailures& xfail) {
  std::map<int, bool> kept_alive;  // glob entry line -> one of its tests failed as listed
  auto glob_of = [&](const TestRecord& r) -> const ExpectedFailures::Entry* {
    const ExpectedFailures::Entry* e = r.xfail_line ? xfail.at_line(r.xfail_line) : nullptr;
    return e && e->is_glob() ? e : nullptr;
  };
  for (const auto& r : records_)
    if (glob_of(r)) kept_alive[r.xfail_line] |= r.status == "expected-failure";
  for (auto& r : records_) {
    const ExpectedFailures::Entry* e = glob_of(r);
    if (!e || kept_alive[r.xfail_line] || r.status != "pass") continue;
    r.status = "unexpected-pass";
    r.message = "passed, and so did every other test that the expected-failure glob '" +
                e->test_glob + "' at " + xfail.source + ":" + std::to_string(e->line) +
                " matched in this run; remove the entry";
  }
}

bool Report::failed() const {
  return std::any_of(records_.begin(), records_.end(), [](const TestRecord& r) {
    return r.status == "fail" || r.status == "unexpected-pass";
  });
}

bool Report::write_json(const std::string& path) const {
  using nlohmann::json;
  uint32_t major = 0, minor = 0, patch = 0;
  xhal_version(&major, &minor, &patch);
  json j;
  j["xhal_version"] =
      std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
  j["date"] = utc_now();
  j["results"] = json::array();
  // Per (op, device): the lowest level over the op's tests; a test that did
  // not pass counts as "none", a passing test without a level is ignored.
  // An unsupported test (the device lacks the op, or one dtype of it, e.g.
  // f64) says nothing about the level of what the device does have: it
  // gives "none" only when every test of the op was unsupported.
  std::map<std::pair<std::string, std::string>, std::optional<Level>> ops;
  for (const auto& r : records_) {
    json e = {{"test", r.test}, {"device", r.device}, {"status", r.status}, {"message", r.message}};
    if (r.op) e["op"] = op_name(*r.op);
    if (r.level) e["level"] = level_name(*r.level);
    j["results"].push_back(std::move(e));
    if (!r.op || r.status == "skipped") continue;
    auto& slot = ops[{op_name(*r.op), r.device}];
    if (r.status == "unsupported") continue;
    if (r.level && (!slot || *r.level < *slot)) slot = r.level;
  }
  j["ops"] = json::array();
  for (const auto& [key, lv] : ops)
    j["ops"].push_back({{"op", key.first},
                        {"device", key.second},
                        {"level", level_name(lv.value_or(Level::kNone))}});
  // One section per device: what it is, then its own counts, verdict, op
  // levels and op verdicts (the results stay in one list, each naming its
  // device).
  auto verdict_json = [](const OpVerdict& v) {
    json o = {{"verdict", v.verdict}};
    if (v.verdict == "pass") o["level"] = level_name(v.level);
    return o;
  };
  j["devices"] = json::array();
  for (const auto& d : devices_) {
    const DeviceSummary s = device_summary(d.name);
    json device_ops = json::object();
    for (const auto& [key, lv] : ops)
      if (key.second == d.name) device_ops[key.first] = level_name(lv.value_or(Level::kNone));
    json verdicts = json::object();
    for (const auto& [op, v] : op_verdicts(d.name)) verdicts[op_name(op)] = verdict_json(v);
    j["devices"].push_back({{"name", d.name},
                            {"device_name", d.device_name},
                            {"backend", d.backend},
                            {"stable_id", d.stable_id},
                            {"plugin_path", d.plugin_path},
                            {"plugin_version", d.plugin_version},
                            {"verdict", s.verdict},
                            {"summary", s.counts},
                            {"ops", std::move(device_ops)},
                            {"op_verdicts", std::move(verdicts)}});
  }
  // One section per plugin: the verdict of the backend as a whole, every op
  // under exactly one of the op verdicts (what a certification reads).
  j["plugins"] = json::array();
  for (const PluginSummary& p : plugin_summaries()) {
    json by_verdict = json::object();
    for (const char* v : kOpVerdicts)
      by_verdict[v] = std::string(v) == "pass" ? json::object() : json::array();
    for (const auto& [op, v] : p.ops) {
      if (v.verdict == "pass") by_verdict["pass"][op_name(op)] = level_name(v.level);
      else by_verdict[v.verdict].push_back(op_name(op));
    }
    j["plugins"].push_back({{"backend", p.backend},
                            {"plugin_path", p.plugin_path},
                            {"plugin_version", p.plugin_version},
                            {"devices", p.devices},
                            {"verdict", p.verdict},
                            {"ops", std::move(by_verdict)}});
  }
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "xhal-conformance: cannot write report '%s'\n", path.c_str());
    return false;
  }
  out << j.dump(2) << "\n";
  return static_cast<bool>(out);
}

DeviceSummary Report::device_summary(const std::string& device) const {
  DeviceSummary s;
  for (const char* status : kStatuses) s.counts[status] = 0;
  for (const auto& r : records_)
    if (r.device == device) ++s.counts[r.status];
  if (s.counts["fail"] + s.counts["unexpected-pass"] > 0) s.verdict = "fail";
  else if (s.counts["pass"] + s.counts["expected-failure"] > 0) s.verdict = "pass";
  else s.verdict = "none";
  return s;
}

std::vector<PluginSummary> Report::plugin_summaries() const {
  std::vector<PluginSummary> plugins;
  for (const auto& d : devices_) {
    auto it = std::find_if(plugins.begin(), plugins.end(), [&](const PluginSummary& p) {
      return p.backend == d.backend && p.plugin_path == d.plugin_path;
    });
    const OpVerdicts verdicts = op_verdicts(d.name);
    const std::string device_verdict = device_summary(d.name).verdict;
    if (it == plugins.end()) {
      PluginSummary p;
      p.backend = d.backend;
      p.plugin_path = d.plugin_path;
      p.plugin_version = d.plugin_version;
      p.devices.push_back(d.name);
      p.verdict = device_verdict;
      p.ops = verdicts;
      plugins.push_back(std::move(p));
      continue;
    }
    it->devices.push_back(d.name);
    if (device_verdict == "fail" || it->verdict == "fail") it->verdict = "fail";
    else if (device_verdict == "pass" || it->verdict == "pass") it->verdict = "pass";
    for (auto& [op, v] : it->ops) v = merge_op_verdicts(v, verdicts.at(op));
  }
  return plugins;
}

void Report::print_summary() const {
  std::map<std::string, int> counts;
  for (const auto& r : records_) ++counts[r.status];
  std::printf("\nxhal-conformance summary:");
  for (const auto& [status, n] : counts) std::printf(" %s=%d", status.c_str(), n);
  std::printf("\n");
  // Per device, when the run had more than one.
  if (devices_.size() > 1) {
    for (const auto& d : devices_) {
      const DeviceSummary s = device_summary(d.name);
      std::printf("  device %-10s %-4s", d.name.c_str(), s.verdict.c_str());
      for (const auto& [status, n] : s.counts)
        if (n > 0) std::printf(" %s=%d", status.c_str(), n);
      std::printf("\n");
    }
  }
  // Per plugin, its ops by verdict.
  for (const PluginSummary& p : plugin_summaries()) {
    std::printf("  plugin %s: %s\n", p.backend.c_str(), p.verdict.c_str());
    for (const char* verdict : kOpVerdicts) {
      std::string list;
      for (const auto& [op, v] : p.ops) {
        if (v.verdict != verdict) continue;
        list += std::string(list.empty() ? "" : ", ") + op_name(op);
        if (v.verdict == "pass") list += std::string(" (") + level_name(v.level) + ")";
      }
      if (!list.empty()) std::printf("    ops %s: %s\n", verdict, list.c_str());
    }
  }
  for (const auto& r : records_)
    if (r.status == "fail" || r.status == "unexpected-pass" || r.status == "expected-failure")
      std::printf("  %-16s %s [%s]%s%s\n", r.status.c_str(), r.test.c_str(), r.device.c_str(),
                  r.op ? " op " : "", r.op ? op_name(*r.op) : "");
}

void ReportListener::OnTestStart(const ::testing::TestInfo& info) { report().begin(info); }

void ReportListener::OnTestPartResult(const ::testing::TestPartResult& result) {
  if (result.failed() || result.skipped()) {
    std::string where = result.file_name() ? std::string(result.file_name()) + ":" +
                                                 std::to_string(result.line_number()) + ": "
                                           : "";
    report().add_failure_text(where + result.message());
  }
}

void ReportListener::OnTestEnd(const ::testing::TestInfo& info) { report().end(info, *xfail_); }

}  // namespace xhal::conf
