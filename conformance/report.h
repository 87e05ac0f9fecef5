// Report bookkeeping of xhal-conformance: one record per test and device,
// filled by the harness calls (record_op, record_level, mark_unsupported)
// and by a gtest event listener, then written as JSON (docs/conformance.md).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "expected_failures.h"
#include "harness.h"

namespace xhal::conf {

struct TestRecord {
  std::string test;    // "Suite.Name" without the device suffix
  std::string device;  // "cpu:0"; "host" for tests that use no device
  std::optional<xhal_op_t> op;
  std::optional<Level> level;  // lowest level recorded by the test
  bool unsupported = false;
  std::string status;  // pass|fail|unsupported|skipped|expected-failure|unexpected-pass
  std::string message;
  uint64_t seed_count = 0;  // fresh_seed() calls so far
  int xfail_line = 0;       // the expected-failures entry that matched (its line), or 0
};

struct DeviceRecord {
  std::string name;         // "cpu:0"
  std::string device_name;  // from xhal_device_info
  std::string backend;
  std::string stable_id;
  std::string plugin_path;
  std::string plugin_version;
};

// A device's part of the run: how many of its tests ended in each status
// (every status present, 0 included) and its verdict: "fail" if a test
// failed or an expected failure passed, else "pass" if a test passed (or
// failed as expected), else "none" (nothing ran on it but skips).
struct DeviceSummary {
  std::map<std::string, int> counts;
  std::string verdict;
};

// What a run says about one op on one device, and merged over the devices
// of one plugin (docs/conformance.md "Op verdicts"): "fail" when a test of
// the op failed (or passed although listed as an expected failure), else
// "expected-failure" when one failed as listed, else "pass" when one passed
// (with `level`, the lowest level its passing tests demonstrated; none when
// no passing test measured one), else "unsupported" when the device lacks
// the op, else "untested" (no test of the op ran, or each was skipped).
struct OpVerdict {
  std::string verdict;
  Level level = Level::kNone;  // meaningful for "pass" only
};
// Every op of xhal_op_t gets one.
using OpVerdicts = std::map<xhal_op_t, OpVerdict>;
// The verdict of one op over several devices: the worst of them, where an
// op that passed on one device and is unsupported on another is "pass".
OpVerdict merge_op_verdicts(const OpVerdict& a, const OpVerdict& b);

// The devices of one plugin file and what the run says about it: "fail"
// if one of its devices failed, else "pass" if one passed, else "none";
// each op's verdict merged over the devices.
struct PluginSummary {
  std::string backend, plugin_path, plugin_version;
  std::vector<std::string> devices;
  std::string verdict;
  OpVerdicts ops;
};

const char* level_name(Level level);
const char* op_name(xhal_op_t op);

class Report {
 public:
  // The record of the test running now (nullptr between tests).
  TestRecord* current() { return current_; }
  void begin(const ::testing::TestInfo& info);
  void end(const ::testing::TestInfo& info, const ExpectedFailures& xfail);
  void add_failure_text(const std::string& text);

  void add_device(DeviceRecord d) { devices_.push_back(std::move(d)); }
  const std::vector<TestRecord>& records() const { return records_; }

  // Crash isolation (isolation.h). In the test process: every test start,
  // op and result is also sent as one JSON line to `fd`. In the supervising
  // process: records read back from it, and the record of a test whose
  // process died, with `message` saying how.
  void set_journal(int fd) { journal_fd_ = fd; }
  void note_op(xhal_op_t op);
  void journal_finished(bool ad_hoc_failed);
  void add_record(TestRecord r) { records_.push_back(std::move(r)); }
  void add_died(const std::string& test, const std::string& gtest_name, const std::string& device,
                std::optional<xhal_op_t> op, const std::string& message,
                const ExpectedFailures& xfail);
  // After the last test: a glob entry of the expected-failures file none of
  // whose tests failed is stale, and the tests it matched that passed
  // become "unexpected-pass" (docs/conformance.md "Expected failures").
  void settle_glob_entries(const ExpectedFailures& xfail);

  // Exit status: non-zero iff a test failed or an expected failure passed.
  bool failed() const;
  // Writes the JSON report; returns false (with a message on stderr) if the
  // file cannot be written.
  bool write_json(const std::string& path) const;
  void print_summary() const;
  DeviceSummary device_summary(const std::string& device) const;
  OpVerdicts op_verdicts(const std::string& device) const;
  std::vector<PluginSummary> plugin_summaries() const;

 private:
  std::vector<DeviceRecord> devices_;
  std::vector<TestRecord> records_;
  TestRecord* current_ = nullptr;
  TestRecord pending_;
  bool in_test_ = false;
  int journal_fd_ = -1;
  void journal(const std::string& line) const;
};

// A record as one JSON object and back (the journal's format).
std::string record_to_json(const TestRecord& r);
TestRecord record_from_json(const std::string& json);

Report& report();

// gtest listener that feeds report(); owned by gtest once appended.
class ReportListener : public ::testing::EmptyTestEventListener {
 public:
  explicit ReportListener(const ExpectedFailures* xfail) : xfail_(xfail) {}
  void OnTestStart(const ::testing::TestInfo& info) override;
  void OnTestPartResult(const ::testing::TestPartResult& result) override;
  void OnTestEnd(const ::testing::TestInfo& info) override;

 private:
  const ExpectedFailures* xfail_;
};

}  // namespace xhal::conf
