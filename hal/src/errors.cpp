// Status names, the thread-local last-error message, and the host table
// through which plugins describe their own failures.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#include "entry.h"

namespace xhal {
namespace {

// The thread's state, in one thread_local so that a call looks the block
// up once or twice: in a shared library each lookup is a __tls_get_addr call.
thread_local ThreadState t_messages;

void host_set_error(const char* message) noexcept {
  try {
    t_messages.plugin_message = message ? message : "";
  } catch (...) {
    t_messages.plugin_message.clear();
  }
}

constexpr xhal_plugin_host_t kHost = {
    sizeof(xhal_plugin_host_t), XHAL_PLUGIN_ABI_MAJOR, XHAL_PLUGIN_ABI_MINOR, &host_set_error, "",
};

}  // namespace

xhal_status_t fail(xhal_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list copy;
  va_copy(copy, args);
  const int length = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  try {
    std::string message(length > 0 ? static_cast<size_t>(length) : 0, '\0');
    if (length > 0) std::vsnprintf(message.data(), message.size() + 1, format, args);
    t_messages.last_error = std::move(message);
  } catch (...) {
    // Out of memory for the message itself: the status still tells.
    t_messages.last_error.clear();
  }
  va_end(args);
  return status;
}

ThreadState& thread_state() { return t_messages; }

xhal_status_t slot_exception(const char* backend, const char* slot) {
  try {
    const std::string where = std::string(backend) + " plugin: " + slot;
    return status_from_exception(where.c_str(), true);
  } catch (...) {
    return status_from_exception(slot, true);
  }
}

xhal_status_t reentry_failure(const char* function) {
  return fail(XHAL_BUSY,
              "%s was called from inside a plugin slot (plugins must not call the xhal app "
              "API; it would deadlock or recurse)",
              function);
}

xhal_status_t status_from_exception(const char* where, bool in_plugin) {
  const char* kind = in_plugin ? "threw" : "failed with";
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return fail(XHAL_OUT_OF_MEMORY, "%s: host memory exhausted (std::bad_alloc)", where);
  } catch (const std::exception& e) {
    return fail(in_plugin ? XHAL_PLUGIN_ERROR : XHAL_INTERNAL, "%s %s a C++ exception: %s", where,
                kind, e.what());
  } catch (...) {
    return fail(in_plugin ? XHAL_PLUGIN_ERROR : XHAL_INTERNAL, "%s %s an exception of unknown type",
                where, kind);
  }
}

void clear_error() {
  ThreadState& m = t_messages;
  m.last_error.clear();
  m.plugin_message.clear();
}

std::string take_plugin_message() {
  std::string message = std::move(t_messages.plugin_message);
  t_messages.plugin_message.clear();
  return message;
}

xhal_status_t plugin_status(int status, const char* backend, const char* slot) {
  // Success path: drop whatever the plugin said without moving a string.
  if (status == XHAL_OK) {
    t_messages.plugin_message.clear();
    return XHAL_OK;
  }
  std::string message = take_plugin_message();
  // A plugin may only return codes the ABI defines; anything else is its bug.
  if (status < XHAL_OK || status > XHAL_INTERNAL) {
    return fail(XHAL_PLUGIN_ERROR, "%s plugin: %s returned unknown status %d%s%s", backend, slot,
                static_cast<int>(status), message.empty() ? "" : ": ", message.c_str());
  }
  const auto known = static_cast<xhal_status_t>(status);
  if (message.empty()) {
    return fail(known, "%s plugin: %s failed (%s)", backend, slot, xhal_status_name(known));
  }
  return fail(known, "%s plugin: %s: %s", backend, slot, message.c_str());
}

xhal_plugin_host_t plugin_host(const char* options) {
  xhal_plugin_host_t host = kHost;
  host.options = options;
  return host;
}

}  // namespace xhal

extern "C" {

const char* xhal_status_name(xhal_status_t status_arg) {
  int status;  // any value may arrive from C: compare it as an integer
  std::memcpy(&status, &status_arg, sizeof status);
  switch (status) {
    case XHAL_OK:
      return "XHAL_OK";
    case XHAL_INVALID_ARGUMENT:
      return "XHAL_INVALID_ARGUMENT";
    case XHAL_OUT_OF_RANGE:
      return "XHAL_OUT_OF_RANGE";
    case XHAL_SHAPE_MISMATCH:
      return "XHAL_SHAPE_MISMATCH";
    case XHAL_UNSUPPORTED:
      return "XHAL_UNSUPPORTED";
    case XHAL_OUT_OF_MEMORY:
      return "XHAL_OUT_OF_MEMORY";
    case XHAL_NOT_FOUND:
      return "XHAL_NOT_FOUND";
    case XHAL_DEVICE_LOST:
      return "XHAL_DEVICE_LOST";
    case XHAL_PLUGIN_ERROR:
      return "XHAL_PLUGIN_ERROR";
    case XHAL_ALIASING:
      return "XHAL_ALIASING";
    case XHAL_INVALID_STRUCTURE:
      return "XHAL_INVALID_STRUCTURE";
    case XHAL_WRONG_DEVICE:
      return "XHAL_WRONG_DEVICE";
    case XHAL_BUSY:
      return "XHAL_BUSY";
    case XHAL_INTERNAL:
      return "XHAL_INTERNAL";
  }
  return "XHAL_UNKNOWN_STATUS";
}

const char* xhal_last_error(void) { return xhal::t_messages.last_error.c_str(); }

}  // extern "C"
