// Crash isolation of xhal-conformance (docs/conformance.md, "Crash
// isolation"): the tests run in a child process (this program re-executed);
// when it dies (a signal, an exit) or stays silent past the test timeout, the
// test it was running is recorded as failed with the reason and the remaining
// tests run in a new child. The child streams its results back through a
// pipe (Report::set_journal), so the report and the summary stay whole.
#pragma once

#include <string>
#include <vector>

#include "expected_failures.h"

namespace xhal::conf {

struct IsolationOptions {
  std::vector<std::string> args;  // this program's original command line
  double test_timeout_s = 0;      // 0: none
};

// The supervisor. Runs children until every selected test has a result;
// their records land in report(). Returns false when the run could not go on
// (a child died before its first test, or hung between tests), with *error.
// `*ad_hoc_failed`: a failure outside any test (gtest's ad hoc result, or a
// child that died after its last test).
bool run_isolated(const IsolationOptions& options, const ExpectedFailures& xfail,
                  bool* ad_hoc_failed, std::string* error);

// The child's side, after InitGoogleTest: adds the tests listed in
// `skip_file` (one full gtest name a line: done by earlier children) to the
// filter's negative patterns.
void skip_tests_listed_in(const std::string& skip_file);

}  // namespace xhal::conf
