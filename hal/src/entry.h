// The two boundaries the core guards: every public C entry point, and every
// call into a plugin slot. No C++ exception crosses either; an app call made
// from inside a plugin slot (re-entry) is a status, not a deadlock.
#pragma once

#include <cstring>
#include <exception>
#include <new>

#include "internal.h"

namespace xhal {

// Depth of plugin slot calls on this thread (> 0 while a plugin runs).
inline int& plugin_depth() { return thread_state().plugin_depth; }

// Turns the exception being handled into a status with a message naming
// `where` (an entry point or "<backend> plugin: <slot>"). Call only from a
// catch block.
xhal_status_t status_from_exception(const char* where, bool in_plugin);
// status_from_exception for an exception thrown by `slot` of `backend`.
xhal_status_t slot_exception(const char* backend, const char* slot);

// Runs the body of public entry point `function`: clears the thread's
// message, refuses re-entry from a plugin slot with XHAL_BUSY, and turns any
// exception into a status. A call that succeeds leaves no message, even when
// a plugin slot it ran re-entered the API and was refused (the plugin
// coped; the refusal is not the app's error).
//   xhal_status_t xhal_x(...) { return xhal::entry("xhal_x", [&] { ... }); }
xhal_status_t reentry_failure(const char* function);
template <typename Body>
inline xhal_status_t entry(const char* function, Body&& body) noexcept {
  ThreadState& t = thread_state();  // one thread-local lookup per call
  t.last_error.clear();
  t.plugin_message.clear();
  if (t.plugin_depth != 0) [[unlikely]]
    return reentry_failure(function);
  try {
    const xhal_status_t s = body();
    if (s == XHAL_OK && !t.last_error.empty()) [[unlikely]]
      t.last_error.clear();
    return s;
  } catch (...) {
    return status_from_exception(function, false);
  }
}

// Calls a plugin slot: counts the depth (re-entry detection), catches what
// the plugin throws, and maps its status (plugin_status). `call` returns the
// slot's xhal_status_t.
template <typename Call>
inline xhal_status_t call_slot(const char* backend, const char* slot, Call&& call) noexcept {
  ThreadState& t = thread_state();
  ++t.plugin_depth;
  int s;  // read as an integer: a plugin may return a value outside the enum
  try {
    const xhal_status_t returned = call();
    std::memcpy(&s, &returned, sizeof s);
  } catch (...) {
    --t.plugin_depth;
    return slot_exception(backend, slot);
  }
  --t.plugin_depth;
  if (s == XHAL_OK) [[likely]] {
    t.plugin_message.clear();  // whatever the plugin said does not matter
    return XHAL_OK;
  }
  return plugin_status(s, backend, slot);
}

// A slot that returns nothing (shutdown, buffer_free, *_destroy): what it
// throws is swallowed, since the caller is releasing and cannot undo.
template <typename Call>
inline void call_void_slot(Call&& call) noexcept {
  int& depth = thread_state().plugin_depth;
  ++depth;
  try {
    call();
  } catch (...) {
  }
  --depth;
}

// Calls a plugin slot of `dev` (a Device*) through call_slot:
//   XHAL_PLUGIN_CALL(dev, index_add, plan, alpha, &src, &dst)
#define XHAL_PLUGIN_CALL(dev, slot, ...)                                      \
  ::xhal::call_slot((dev)->backend.c_str(), #slot, [&]() -> xhal_status_t {   \
    return (dev)->api->slot((dev)->plugin_device __VA_OPT__(, ) __VA_ARGS__); \
  })

// Returns the status of `expr` unless it is XHAL_OK.
#ifndef XHAL_TRY
#define XHAL_TRY(expr)                                       \
  do {                                                       \
    if (xhal_status_t s_ = (expr); s_ != XHAL_OK) return s_; \
  } while (0)
#endif

}  // namespace xhal
