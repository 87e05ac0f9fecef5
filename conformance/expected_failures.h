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
  };
  // Parses `path`; on a malformed line returns false and sets *error.
  bool load(const std::string& path, std::string* error);
  bool parse(const std::string& text, std::string* error);
  // The matching entry, or nullptr. `test` is "Suite.Name", `device` "cpu:0".
  const Entry* match(const std::string& test, const std::string& device) const;
  const std::vector<Entry>& entries() const { return entries_; }
  std::string source;  // file path, for messages

 private:
  std::vector<Entry> entries_;
};

}  // namespace xhal::conf
