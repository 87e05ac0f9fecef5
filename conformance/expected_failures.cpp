#include "expected_failures.h"

#include <fnmatch.h>

#include <fstream>
#include <sstream>

namespace xhal::conf {

bool ExpectedFailures::load(const std::string& path, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot open expected-failures file '" + path + "'";
    return false;
  }
  source = path;
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), error);
}

bool ExpectedFailures::parse(const std::string& text, std::string* error) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    if (auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream words(line);
    Entry e;
    e.line = number;
    if (!(words >> e.test_glob)) continue;  // blank or comment-only
    if (!(words >> e.device_glob)) e.device_glob = "*";
    std::string extra;
    if (words >> extra) {
      *error = source + ":" + std::to_string(number) +
               ": expected `<test-glob> [device-glob]`, found extra word '" + extra + "'";
      return false;
    }
    entries_.push_back(std::move(e));
  }
  return true;
}

const ExpectedFailures::Entry* ExpectedFailures::match(const std::string& test,
                                                       const std::string& device,
                                                       const std::string& gtest_name) const {
  for (const auto& e : entries_) {
    const bool name_matches =
        fnmatch(e.test_glob.c_str(), test.c_str(), 0) == 0 ||
        (!gtest_name.empty() && fnmatch(e.test_glob.c_str(), gtest_name.c_str(), 0) == 0);
    if (name_matches && fnmatch(e.device_glob.c_str(), device.c_str(), 0) == 0) return &e;
  }
  return nullptr;
}

const ExpectedFailures::Entry* ExpectedFailures::at_line(int line) const {
  for (const auto& e : entries_)
    if (e.line == line) return &e;
  return nullptr;
}

}  // namespace xhal::conf
