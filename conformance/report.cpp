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

void Report::add_died(const std::string& test, const std::string& device,
                      std::optional<xhal_op_t> op, const std::string& message,
                      const ExpectedFailures& xfail) {
  TestRecord r;
  r.test = test;
  r.device = device;
  r.op = op;
  r.message = message;
  if (const ExpectedFailures::Entry* expected = xfail.match(r.test, r.device)) {
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
  nlohmann::json j = {{"test", r.test},     {"device", r.device},   {"unsupported", r.unsupported},
                      {"status", r.status}, {"message", r.message}, {"seed_count", r.seed_count}};
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
  const ExpectedFailures::Entry* expected = xfail.match(r.test, r.device);
  if (result.Failed()) {
    r.status = expected ? "expected-failure" : "fail";
    if (expected)
      r.message = "expected failure (" + xfail.source + ":" + std::to_string(expected->line) +
                  "): " + r.message;
  } else if (result.Skipped()) {
    r.status = r.unsupported ? "unsupported" : "skipped";
  } else if (expected) {
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
  std::map<std::pair<std::string, std::string>, std::optional<Level>> ops;
  for (const auto& r : records_) {
    json e = {{"test", r.test}, {"device", r.device}, {"status", r.status}, {"message", r.message}};
    if (r.op) e["op"] = op_name(*r.op);
    if (r.level) e["level"] = level_name(*r.level);
    j["results"].push_back(std::move(e));
    if (!r.op || r.status == "skipped") continue;
    auto& slot = ops[{op_name(*r.op), r.device}];
    std::optional<Level> lv =
        r.status == "unsupported" ? std::optional<Level>(Level::kNone) : r.level;
    if (lv && (!slot || *lv < *slot)) slot = lv;
  }
  j["ops"] = json::array();
  for (const auto& [key, lv] : ops)
    j["ops"].push_back({{"op", key.first},
                        {"device", key.second},
                        {"level", level_name(lv.value_or(Level::kNone))}});
  // One section per device: what it is, then its own counts, verdict and op
  // levels (the results stay in one list, each naming its device).
  j["devices"] = json::array();
  for (const auto& d : devices_) {
    const DeviceSummary s = device_summary(d.name);
    json device_ops = json::object();
    for (const auto& [key, lv] : ops)
      if (key.second == d.name) device_ops[key.first] = level_name(lv.value_or(Level::kNone));
    j["devices"].push_back({{"name", d.name},
                            {"device_name", d.device_name},
                            {"backend", d.backend},
                            {"stable_id", d.stable_id},
                            {"plugin_path", d.plugin_path},
                            {"plugin_version", d.plugin_version},
                            {"verdict", s.verdict},
                            {"summary", s.counts},
                            {"ops", std::move(device_ops)}});
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
  for (const auto& r : records_)
    if (r.status == "fail" || r.status == "unexpected-pass" || r.status == "expected-failure")
      std::printf("  %-16s %s [%s]\n", r.status.c_str(), r.test.c_str(), r.device.c_str());
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
