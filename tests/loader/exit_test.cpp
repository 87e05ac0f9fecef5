// Process exit with the runtime up: `leak` keeps a device and a buffer
// open (the runtime must then leave plugins loaded, not crash); `clean`
// releases them first (the runtime shuts down at exit); `shutdown` also
// calls xhal_runtime_shutdown (plugins unloaded before exit).
// Usage: xhal-exit-test leak|clean|shutdown [plugin-path]   (exit 0 = success)
#include <cstdio>
#include <cstring>

#include "xhal/xhal.h"

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const bool leak = std::strcmp(argv[1], "leak") == 0;
  xhal_runtime_options_t options{};
  options.struct_size = sizeof(options);
  options.plugin_path = argc > 2 ? argv[2] : nullptr;
  options.plugin_path_only = argc > 2 ? 1 : 0;
  if (xhal_runtime_init(&options) != XHAL_OK) {
    std::fprintf(stderr, "init: %s\n", xhal_last_error());
    return 3;
  }
  xhal_device_t device = nullptr;
  xhal_buffer_t buffer = nullptr;
  if (xhal_device_open(nullptr, &device) != XHAL_OK ||
      xhal_buffer_allocate(device, 1 << 20, &buffer) != XHAL_OK ||
      xhal_buffer_fill(buffer, 0, 1 << 20, "\x2a", 1) != XHAL_OK) {
    std::fprintf(stderr, "setup: %s\n", xhal_last_error());
    return 4;
  }
  if (!leak) {
    xhal_buffer_release(buffer);
    xhal_device_release(device);
  }
  if (std::strcmp(argv[1], "shutdown") == 0 && xhal_runtime_shutdown() != XHAL_OK) {
    std::fprintf(stderr, "shutdown: %s\n", xhal_last_error());
    return 5;
  }
  std::printf("exiting with the runtime up (%s)\n", leak ? "handles leaked" : "handles released");
  return 0;
}
