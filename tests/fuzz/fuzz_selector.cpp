// libFuzzer harness (a): the device selector (docs/device-selection.md)
// through the public API: xhal_runtime_init with options.device_selector,
// the device list, xhal_device_open with a second selector, release and
// xhal_runtime_shutdown, per input.
//
// The plugins: the cpu plugin and the core tests' fake backends of
// tests/fake_plugins/select (alpha: cpu kind, beta: gpu, gamma: other,
// sharing stable ids with beta, marker), so kinds, indices and stable ids
// all have something to match.
//
// Oracle: an independent reading of the documented grammar and meaning.
// Malformed (by the grammar) <=> XHAL_INVALID_ARGUMENT; otherwise the
// runtime's device list is the documented selection from the full list
// (taken once without a selector), and xhal_device_open opens its first
// match.
//
// Layout (make_corpus.py): runtime selector = text(64), open selector =
// text(64), then flags: open_null = pick(4) == 0.
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.h"

using namespace xhal_fuzz;

namespace {

struct Dev {
  std::string backend, stable_id;
  uint32_t index;
};

// ---- the grammar, as documented -------------------------------------------
struct Term {
  bool negate = false;
  std::string backend;  // or "*"
  enum { kAll, kIndex, kId } device = kAll;
  uint64_t index = 0;
  std::string id;
};

bool blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}
bool id_char(char c) { return name_char(c) || c == '.' || c == ':'; }

// Returns false when malformed. `none` is set for an empty/blank selector.
bool parse(std::string_view text, std::vector<Term>& out, bool& none) {
  size_t a = 0, b = text.size();
  while (a < b && blank(text[a])) ++a;
  while (b > a && blank(text[b - 1])) --b;
  none = a == b;
  if (none) return true;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    std::string_view term = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!term.empty() && blank(term.front())) term.remove_prefix(1);
    while (!term.empty() && blank(term.back())) term.remove_suffix(1);
    Term t;
    if (!term.empty() && term.front() == '!') {
      t.negate = true;
      term.remove_prefix(1);
    }
    const size_t colon = term.find(':');
    const std::string_view backend = term.substr(0, colon);
    if (backend.empty()) return false;
    if (backend != "*")
      for (char c : backend)
        if (!name_char(c)) return false;
    t.backend = std::string(backend);
    if (colon != std::string_view::npos) {
      const std::string_view device = term.substr(colon + 1);
      if (device.empty() || device.back() == ':') return false;
      bool digits = true;
      for (char c : device) digits &= c >= '0' && c <= '9';
      if (device == "*") {
        t.device = Term::kAll;
      } else if (digits) {
        uint64_t v = 0;
        for (char c : device) {
          v = v * 10 + static_cast<uint64_t>(c - '0');
          if (v > 0xFFFFFFFFull) return false;  // "an index above 2^32-1"
        }
        t.device = Term::kIndex;
        t.index = v;
      } else {
        for (char c : device)
          if (!id_char(c)) return false;
        t.device = Term::kId;
        t.id = std::string(device);
      }
    }
    out.push_back(std::move(t));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return true;
}

bool matches(const Term& t, const Dev& d) {
  if (t.backend != "*" && t.backend != d.backend) return false;
  switch (t.device) {
    case Term::kAll:
      return true;
    case Term::kIndex:
      return t.index == d.index;
    default:
      return !d.stable_id.empty() && t.id == d.stable_id;
  }
}

// The documented meaning: positive terms add in term order (default order
// within a term), duplicates once; '!' terms remove; only '!' terms start
// from every device.
std::vector<size_t> select(const std::vector<Term>& terms, bool none, const std::vector<Dev>& all) {
  std::vector<size_t> chosen;
  bool positive = false;
  for (const Term& t : terms) positive |= !t.negate;
  auto add = [&](size_t i) {
    for (size_t c : chosen)
      if (c == i) return;
    chosen.push_back(i);
  };
  if (none || !positive)
    for (size_t i = 0; i < all.size(); ++i) add(i);
  for (const Term& t : terms)
    if (!t.negate)
      for (size_t i = 0; i < all.size(); ++i)
        if (matches(t, all[i])) add(i);
  std::vector<size_t> kept;
  for (size_t i : chosen) {
    bool removed = false;
    for (const Term& t : terms) removed |= t.negate && matches(t, all[i]);
    if (!removed) kept.push_back(i);
  }
  return kept;
}

// ---- the runtime ----------------------------------------------------------
std::string plugin_path() {
  return std::string(XHAL_FUZZ_FAKE_SELECT_DIR) + ":" + XHAL_FUZZ_CPU_PLUGIN;
}

xhal_status_t start(const char* selector) {
  const std::string path = plugin_path();
  xhal_runtime_options_t o{};
  o.struct_size = sizeof o;
  o.device_selector = selector;
  o.plugin_path = path.c_str();
  o.plugin_path_only = 1;
  return XF_CALL(xhal_runtime_init(&o));
}

std::vector<Dev> device_list() {
  std::vector<Dev> out;
  uint32_t n = 0;
  if (XF_CALL(xhal_device_count(&n)) != XHAL_OK) return out;
  for (uint32_t i = 0; i < n; ++i) {
    xhal_device_info_t info{};
    info.struct_size = sizeof info;
    XF_MUST(xhal_device_get_info(i, &info));
    out.push_back({info.backend, info.stable_id ? info.stable_id : "", info.backend_index});
  }
  return out;
}

// Every device the plugins offer, in the default order (no selector).
const std::vector<Dev>& all_devices() {
  static const std::vector<Dev> all = [] {
    XF_MUST(start(""));
    std::vector<Dev> list = device_list();
    XF_MUST(xhal_runtime_shutdown());
    if (list.size() < 4) broken("expected the fake and cpu devices", "device_list", XHAL_OK);
    return list;
  }();
  return all;
}

std::string label(const Dev& d) { return d.backend + ":" + std::to_string(d.index); }

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  xhal_fuzz::keep_loaded(XHAL_FUZZ_CPU_PLUGIN);
  xhal_fuzz::keep_folder_loaded(XHAL_FUZZ_FAKE_SELECT_DIR);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<Dev>& all = all_devices();
  Input in(data, size);
  const std::string runtime_selector = in.text(64);
  const std::string open_selector = in.text(64);
  const bool open_null = in.pick(4) == 0;

  // Embedded NULs end the C string; the oracle reads what the core reads.
  const std::string rs(runtime_selector.c_str());
  const std::string os(open_selector.c_str());
  std::vector<Term> rterms, oterms;
  bool rnone = false, onone = false;
  const bool rvalid = parse(rs, rterms, rnone);
  const bool ovalid = open_null || parse(os, oterms, onone);
  if (open_null) onone = true;

  const xhal_status_t s = start(rs.c_str());
  if (!rvalid) {
    if (s != XHAL_INVALID_ARGUMENT) broken("a malformed selector was accepted", rs.c_str(), s);
    // The start failed and left the runtime stopped.
    const xhal_status_t again = XF_CALL(xhal_runtime_shutdown());
    (void)again;
    return 0;
  }
  if (s != XHAL_OK) broken("a well-formed selector was refused", rs.c_str(), s);

  const std::vector<size_t> want = select(rterms, rnone, all);
  const std::vector<Dev> got = device_list();
  bool same = got.size() == want.size();
  for (size_t i = 0; same && i < got.size(); ++i) same = label(got[i]) == label(all[want[i]]);
  if (!same) {
    std::string text = "device list differs from the documented selection; want:";
    for (size_t i : want) text += " " + label(all[i]);
    text += "; got:";
    for (const Dev& d : got) text += " " + label(d);
    broken(text.c_str(), rs.c_str(), XHAL_OK);
  }
  uint32_t count = 0;
  const xhal_status_t cs = XF_CALL(xhal_device_count(&count));
  if ((cs == XHAL_NOT_FOUND) != want.empty())
    broken("device_count is NOT_FOUND exactly when nothing matches", rs.c_str(), cs);

  xhal_device_t dev = nullptr;
  const xhal_status_t os_status = XF_CALL(xhal_device_open(open_null ? nullptr : os.c_str(), &dev));
  if (!ovalid) {
    if (os_status != XHAL_INVALID_ARGUMENT)
      broken("open: a malformed selector was accepted", os.c_str(), os_status);
  } else {
    // The first device of the runtime's list that the open selector picks.
    std::vector<Dev> list;
    for (size_t i : want) list.push_back(all[i]);
    const std::vector<size_t> pick = select(oterms, onone, list);
    if (pick.empty()) {
      if (os_status != XHAL_NOT_FOUND)
        broken("open: no match must be NOT_FOUND", os.c_str(), os_status);
    } else {
      if (os_status != XHAL_OK) broken("open: a matching selector failed", os.c_str(), os_status);
      xhal_device_info_t info{};
      info.struct_size = sizeof info;
      XF_MUST(xhal_device_query(dev, &info));
      if (label(list[pick[0]]) !=
          std::string(info.backend) + ":" + std::to_string(info.backend_index))
        broken("open: not the first match", os.c_str(), os_status);
      const xhal_status_t busy = XF_CALL(xhal_runtime_shutdown());
      if (busy != XHAL_BUSY)
        broken("shutdown with a device open must be BUSY", "xhal_runtime_shutdown", busy);
      XF_MUST(xhal_device_release(dev));
    }
  }
  XF_MUST(xhal_runtime_shutdown());
  return 0;
}
