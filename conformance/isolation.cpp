#include "isolation.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "report.h"

namespace xhal::conf {
namespace {

using Clock = std::chrono::steady_clock;

std::string signal_name(int sig) {
  if (const char* abbrev = sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

// The test a child has started and not finished.
struct InFlight {
  std::string name;  // gtest's full name, for the skip list
  std::string test, device;
  std::optional<xhal_op_t> op;
};

// What one child did.
struct ChildRun {
  std::optional<InFlight> in_flight;
  int started = 0;
  bool finished = false;
  bool ad_hoc_failed = false;
  bool timed_out = false;
  int status = 0;
};

// Removes the temporary skip file however the run ends.
struct TempFile {
  std::string path;
  TempFile() {
    char name[] = "/tmp/xhal-conformance-done-XXXXXX";
    const int fd = mkstemp(name);
    if (fd >= 0) {
      close(fd);
      path = name;
    }
  }
  ~TempFile() {
    if (!path.empty()) unlink(path.c_str());
  }
};

void handle_line(const std::string& line, ChildRun* run, std::vector<std::string>* done) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(line);
  } catch (const std::exception&) {
    return;  // not ours (cannot happen: the pipe is the journal's alone)
  }
  const std::string event = j.value("event", "");
  if (event == "start") {
    run->in_flight =
        InFlight{j.value("name", ""), j.value("test", ""), j.value("device", "host"), {}};
    ++run->started;
  } else if (event == "op" && run->in_flight) {
    run->in_flight->op = static_cast<xhal_op_t>(j.value("op", 0));
  } else if (event == "end") {
    report().add_record(record_from_json(j.at("record").dump()));
    done->push_back(j.value("name", ""));
    run->in_flight.reset();
  } else if (event == "finished") {
    run->finished = true;
    run->ad_hoc_failed = j.value("ad_hoc_failed", false);
  }
}

// Starts one child on the tests not in `done` and follows it to its end.
bool run_child(const IsolationOptions& o, const std::string& skip_path,
               std::vector<std::string>* done, ChildRun* run, std::string* error) {
  {
    std::ofstream skip(skip_path, std::ios::trunc);
    for (const std::string& name : *done) skip << name << "\n";
    if (!skip) {
      *error = "cannot write " + skip_path;
      return false;
    }
  }
  int journal[2];
  if (pipe2(journal, O_CLOEXEC) != 0) {
    *error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  std::vector<std::string> args = o.args;
  args.push_back("--isolated-child=" + std::to_string(journal[1]));
  args.push_back("--isolated-skip=" + skip_path);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t child = fork();
  if (child < 0) {
    *error = std::string("fork: ") + std::strerror(errno);
    return false;
  }
  // The child stays in this process group, so that Ctrl-C stops it too.
  if (child == 0) {
    fcntl(journal[1], F_SETFD, 0);  // the write end survives exec
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(journal[1]);

  std::string pending;
  bool open = true, exited = false;
  auto last_event = Clock::now();
  // Reads what the journal holds, waiting up to `wait_ms` for it.
  enum class Read { kData, kNothing, kEnd };
  auto read_journal = [&](int wait_ms) {
    pollfd p{journal[0], POLLIN, 0};
    if (poll(&p, 1, wait_ms) <= 0) return Read::kNothing;
    char chunk[8192];
    const ssize_t n = read(journal[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) return Read::kNothing;
    if (n <= 0) return Read::kEnd;
    pending.append(chunk, static_cast<size_t>(n));
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      handle_line(pending.substr(0, eol), run, done);
      pending.erase(0, eol + 1);
    }
    last_event = Clock::now();
    return Read::kData;
  };
  while (!exited) {
    if (open) {
      open = read_journal(100) != Read::kEnd;
    } else {
      usleep(20 * 1000);
    }
    if (waitpid(child, &run->status, WNOHANG) == child) {
      exited = true;
    } else if (o.test_timeout_s > 0 &&
               Clock::now() - last_event > std::chrono::duration<double>(o.test_timeout_s)) {
      kill(child, SIGKILL);
      waitpid(child, &run->status, 0);
      exited = run->timed_out = true;
    }
  }
  // The child's last events may still be in the pipe when its exit is seen.
  while (open && read_journal(0) == Read::kData) {
  }
  close(journal[0]);
  return true;
}

std::string how_it_ended(const ChildRun& run, double timeout_s) {
  if (run.timed_out) return "was killed after " + seconds_text(timeout_s) + " s without a result";
  if (WIFSIGNALED(run.status)) return "was killed by " + signal_name(WTERMSIG(run.status));
  return "exited with status " + std::to_string(WEXITSTATUS(run.status));
}

}  // namespace

bool run_isolated(const IsolationOptions& o, const ExpectedFailures& xfail, bool* ad_hoc_failed,
                  std::string* error) {
  TempFile skip;
  if (skip.path.empty()) {
    *error = std::string("cannot create a temporary file: ") + std::strerror(errno);
    return false;
  }
  std::vector<std::string> done;
  for (;;) {
    ChildRun run;
    if (!run_child(o, skip.path, &done, &run, error)) return false;
    *ad_hoc_failed = *ad_hoc_failed || run.ad_hoc_failed;
    const bool clean_exit = !run.timed_out && WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0;
    if (run.in_flight) {
      const InFlight& t = *run.in_flight;
      const std::string message = "the test process " + how_it_ended(run, o.test_timeout_s) +
                                  " during this test (crash isolation: the remaining tests ran "
                                  "in a new process)";
      std::printf("[  FAILED  ] %s: %s\n", t.name.c_str(), message.c_str());
      report().add_died(t.test, t.name, t.device, t.op, message, xfail);
      done.push_back(t.name);
      continue;
    }
    if (run.finished) {
      if (!clean_exit) {
        std::printf("xhal-conformance: the test process %s after its last test\n",
                    how_it_ended(run, o.test_timeout_s).c_str());
        *ad_hoc_failed = true;
      }
      return true;
    }
    if (WIFEXITED(run.status) && WEXITSTATUS(run.status) == 127 && run.started == 0) {
      *error = "cannot re-run /proc/self/exe for crash isolation (use --no-isolate)";
      return false;
    }
    if (run.started == 0) {
      *error = "the test process " + how_it_ended(run, o.test_timeout_s) + " before its first test";
      return false;
    }
    // Died between two tests: the tests it finished count; go on without it.
    std::printf("xhal-conformance: the test process %s between tests; continuing in a new one\n",
                how_it_ended(run, o.test_timeout_s).c_str());
    *ad_hoc_failed = true;
  }
}

void skip_tests_listed_in(const std::string& skip_file) {
  std::ifstream in(skip_file);
  std::string names, line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    names += (names.empty() ? "" : ":") + line;
  }
  if (names.empty()) return;
  std::string pattern = GTEST_FLAG_GET(filter);
  // gtest's filter is POSITIVE[-NEGATIVE]: the done tests join the negatives.
  pattern += (pattern.find('-') == std::string::npos ? "-" : ":") + names;
  GTEST_FLAG_SET(filter, pattern);
}

}  // namespace xhal::conf
