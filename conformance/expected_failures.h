// The vendor's expected-failure list (docs/conformance.md): one entry per
// line, `<test-name-glob> [device-glob]`, '#' starts a comment.
#pragma once

#include <string>
#include <vector>

namespace xhal::conf {

class ExpectedFailures {
 public:
  struct Entry {
    std::string test_glob;
    std::string device_glob;  // "*" when the line names no device
    int line = 0;
    // A test pattern with a wildcard (* ? [) names a family of tests: one
    // of them passing is no news, only the whole family passing is
    // (Report::settle_glob_entries).
    bool is_glob() const { return test_glob.find_first_of("*?[") != std::string::npos; }
  };
  // Parses `path`; on a malformed line returns false and sets *error.
  bool load(const std::string& path, std::string* error);
  bool parse(const std::string& text, std::string* error);
  // The first matching entry, or nullptr. `test` is "Suite.Name", `device`
  // "cpu:0"; an entry's test pattern may also be written in gtest's form
  // and is then matched against `gtest_name`
  // ("Devices/Suite.Name/cpu_0"; "" for a test that has none).
  const Entry* match(const std::string& test, const std::string& device,
                     const std::string& gtest_name = "") const;
  // The entry of file line `line`, or nullptr.
  const Entry* at_line(int line) const;
  const std::vector<Entry>& entries() const { return entries_; }
  std::string source;  // file path, for messages

 private:
  std::vector<Entry> entries_;
};

}  // namespace xhal::conf
