// A test that always fails, disabled by default. The runner's own ctest
// checks run it (--gtest_also_run_disabled_tests) to prove that a listed
// failure is reported as expected-failure and does not fail the run.
#include <gtest/gtest.h>

namespace {
TEST(RunnerSelfTest, DISABLED_AlwaysFails) { ADD_FAILURE() << "planted failure for the runner's self-check"; }
}  // namespace
