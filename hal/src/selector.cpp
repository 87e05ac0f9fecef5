#include "selector.h"

#include <algorithm>
#include <charconv>

#include "internal.h"

namespace xhal {
namespace {

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

// Stable ids are UUIDs ("GPU-8f1c...") or bus ids ("pci:0000:17:00.0").
bool is_id_char(char c) { return is_name_char(c) || c == '.' || c == ':'; }

bool all_of(std::string_view s, bool (*pred)(char)) {
  return std::all_of(s.begin(), s.end(), pred);
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Returns "" when `term` is well formed, else why not.
std::string parse_term(std::string_view term, SelectorTerm* out) {
  if (term.empty()) return "empty term";
  if (term.front() == '!') {
    out->negate = true;
    term.remove_prefix(1);
    if (term.empty()) return "'!' without a backend";
  }
  const size_t colon = term.find(':');
  const std::string_view backend = term.substr(0, colon);
  if (backend.empty()) return "missing backend name before ':'";
  if (backend != "*" && !all_of(backend, is_name_char)) {
    return "backend name may hold only letters, digits, '_' and '-' (or be '*')";
  }
  out->backend = std::string(backend);
  if (colon == std::string_view::npos) return "";
  const std::string_view device = term.substr(colon + 1);
  if (device.empty() || device.back() == ':') return "missing device after ':'";
  if (device == "*") return "";
  if (all_digits(device)) {
    uint32_t index = 0;
    const auto [end, ec] = std::from_chars(device.data(), device.data() + device.size(), index);
    if (ec != std::errc() || end != device.data() + device.size()) {
      return "device index too large";
    }
    out->device = SelectorTerm::Device::kIndex;
    out->index = index;
    return "";
  }
  if (!all_of(device, is_id_char)) {
    return "device must be an index, '*' or a stable id (letters, digits, '_', '-', '.', ':')";
  }
  out->device = SelectorTerm::Device::kStableId;
  out->stable_id = std::string(device);
  return "";
}

bool matches(const SelectorTerm& term, const SelectableDevice& device) {
  if (term.backend != "*" && term.backend != device.backend) return false;
  switch (term.device) {
    case SelectorTerm::Device::kAny:
      return true;
    case SelectorTerm::Device::kIndex:
      return term.index == device.backend_index;
    case SelectorTerm::Device::kStableId:
      return !device.stable_id.empty() && term.stable_id == device.stable_id;
  }
  return false;
}

}  // namespace

xhal_status_t parse_selector(const char* text, const char* source, Selector* out) {
  Selector selector;
  selector.text = text ? text : "";
  if (trim(selector.text).empty()) {
    *out = std::move(selector);
    return XHAL_OK;
  }
  std::string_view rest = selector.text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view raw = rest.substr(0, comma);
    const std::string_view term_text = trim(raw);
    SelectorTerm term;
    const std::string why = parse_term(term_text, &term);
    if (!why.empty()) {
      return fail(XHAL_INVALID_ARGUMENT,
                  "%s '%s' is malformed: term '%.*s': %s (grammar: "
                  "[!]backend[:index|:*|:stable-id], comma-separated)",
                  source, selector.text.c_str(), static_cast<int>(term_text.size()),
                  term_text.data(), why.c_str());
    }
    selector.has_positive |= !term.negate;
    selector.terms.push_back(std::move(term));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  *out = std::move(selector);
  return XHAL_OK;
}

bool selector_needs_backend(const Selector& selector, std::string_view backend) {
  if (selector.terms.empty()) return true;
  bool wanted = !selector.has_positive;
  for (const SelectorTerm& term : selector.terms) {
    const bool names_it = term.backend == "*" || term.backend == backend;
    if (!names_it) continue;
    // "!cuda" or "!cuda:*" (or "!*") removes every device of the backend.
    if (term.negate && term.device == SelectorTerm::Device::kAny) return false;
    if (!term.negate) wanted = true;
  }
  return wanted;
}

std::vector<size_t> apply_selector(const Selector& selector,
                                   std::span<const SelectableDevice> devices) {
  // A plugin may list thousands of devices: membership by flag, not by search,
  // keeps selection linear in the device count.
  std::vector<size_t> chosen;
  std::vector<bool> taken(devices.size(), false);
  auto add = [&](size_t i) {
    if (!taken[i]) {
      taken[i] = true;
      chosen.push_back(i);
    }
  };
  if (!selector.has_positive) {
    for (size_t i = 0; i < devices.size(); ++i) add(i);
  }
  for (const SelectorTerm& term : selector.terms) {
    if (term.negate) continue;
    for (size_t i = 0; i < devices.size(); ++i) {
      if (matches(term, devices[i])) add(i);
    }
  }
  // '!' terms win wherever they stand.
  std::erase_if(chosen, [&](size_t i) {
    return std::any_of(selector.terms.begin(), selector.terms.end(),
                       [&](const SelectorTerm& t) { return t.negate && matches(t, devices[i]); });
  });
  return chosen;
}

}  // namespace xhal
