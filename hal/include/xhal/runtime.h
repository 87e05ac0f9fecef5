/* The process-wide runtime: plugin discovery, loading and the device list.
 * It starts lazily on the first call that needs it, configured from the
 * environment (XHAL_DEVICE, XHAL_PLUGIN_PATH); xhal_runtime_init lets a
 * program (a test, the conformance runner) configure it explicitly. */
#ifndef XHAL_RUNTIME_H_
#define XHAL_RUNTIME_H_

#include "xhal/export.h"
#include "xhal/status.h"
#include "xhal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define XHAL_VERSION_MAJOR 0
#define XHAL_VERSION_MINOR 1
#define XHAL_VERSION_PATCH 0

XHAL_API xhal_status_t xhal_version(uint32_t* out_major, uint32_t* out_minor, uint32_t* out_patch);

typedef struct xhal_runtime_options {
  size_t struct_size; /* sizeof(xhal_runtime_options_t) as the caller knows it */
  /* Device selector; NULL means the XHAL_DEVICE environment variable. */
  const char* device_selector;
  /* Colon-separated folders or plugin files; NULL means XHAL_PLUGIN_PATH. */
  const char* plugin_path;
  /* Non-zero: search only plugin_path, not the installed plugin folder nor
   * the folder beside libxhal (a vendor testing one plugin file). */
  int32_t plugin_path_only;
} xhal_runtime_options_t;

/* Starts the runtime. options may be NULL (environment only). Fails with
 * XHAL_BUSY if it is already running; a malformed selector is
 * XHAL_INVALID_ARGUMENT and leaves the runtime stopped. */
XHAL_API xhal_status_t xhal_runtime_init(const xhal_runtime_options_t* options);

/* Unloads every plugin. Fails with XHAL_BUSY (and stays up) while devices
 * are open. A later call starts the runtime again. Also runs at exit. */
XHAL_API xhal_status_t xhal_runtime_shutdown(void);

/* ---- plugins --------------------------------------------------------- */

typedef enum xhal_plugin_state {
  XHAL_PLUGIN_LOADED = 0,
  XHAL_PLUGIN_REJECTED = 1, /* reason says why */
  XHAL_PLUGIN_SKIPPED = 2,  /* not loaded: the selector does not need it */
} xhal_plugin_state_t;

typedef struct xhal_plugin_info {
  size_t struct_size; /* set by the caller; fields past it are not written */
  const char* path;
  const char* backend; /* from the file name, or as declared once loaded */
  xhal_plugin_state_t state;
  const char* reason; /* why rejected/skipped; when loaded, the
                         plugin's note ("" or e.g. "0 devices: ...") */
  uint32_t abi_major; /* 0 when unknown */
  uint32_t abi_minor;
  const char* plugin_version; /* "" when unknown */
  uint32_t device_count;
} xhal_plugin_info_t;

/* Every candidate file the runtime considered, in search order. Strings live
 * until xhal_runtime_shutdown. */
XHAL_API xhal_status_t xhal_plugin_count(uint32_t* out_count);
XHAL_API xhal_status_t xhal_plugin_get_info(uint32_t index, xhal_plugin_info_t* out_info);

#ifdef __cplusplus
}
#endif
#endif
