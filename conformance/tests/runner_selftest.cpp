// Tests of the runner itself, disabled by default; the runner's own ctest
// checks run them (--gtest_also_run_disabled_tests).
//   AlwaysFails: a listed failure is reported as expected-failure and does
//     not fail the run.
//   MisbehavesWhenAsked: XHAL_CONF_SELFTEST_MISBEHAVE=segv makes an invalid
//     memory access, =hang never returns: crash isolation must record this
//     test as failed (with the signal, or the timeout) and run the rest.
//     Without the variable it passes.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace {
TEST(RunnerSelfTest, DISABLED_AlwaysFails) {
  ADD_FAILURE() << "planted failure for the runner's self-check";
}

TEST(RunnerSelfTest, DISABLED_MisbehavesWhenAsked) {
  const char* what = std::getenv("XHAL_CONF_SELFTEST_MISBEHAVE");
  const std::string planted = what ? what : "";
  if (planted == "segv") {
    int* volatile nowhere = reinterpret_cast<int*>(uintptr_t{8});
    *nowhere = 1;
  } else if (planted == "hang") {
    for (;;) pause();
  }
  SUCCEED();
}
}  // namespace
