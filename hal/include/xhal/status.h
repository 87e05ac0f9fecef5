/* xhal status codes and the thread-local error message.
 * Every xhal call returns an xhal_status_t. On failure the calling thread's
 * message (xhal_last_error) names the argument and the value that was wrong. */
#ifndef XHAL_STATUS_H_
#define XHAL_STATUS_H_

#include "xhal/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Values are part of the ABI: never renumber, only append. */
typedef enum xhal_status {
  XHAL_OK = 0,
  XHAL_INVALID_ARGUMENT = 1, /* null handle, bad dtype, malformed string... */
  XHAL_OUT_OF_RANGE = 2,     /* index or byte range outside its bounds */
  XHAL_SHAPE_MISMATCH = 3,   /* shapes of related arguments disagree */
  XHAL_UNSUPPORTED = 4,      /* the device lacks this op or dtype */
  XHAL_OUT_OF_MEMORY = 5,
  XHAL_NOT_FOUND = 6,          /* no device/plugin matches */
  XHAL_DEVICE_LOST = 7,        /* asynchronous fault; the device is unusable */
  XHAL_PLUGIN_ERROR = 8,       /* a plugin failed in a way it did not classify */
  XHAL_ALIASING = 9,           /* an output overlaps an input where forbidden */
  XHAL_INVALID_STRUCTURE = 10, /* CSR pattern or index plan is malformed */
  XHAL_WRONG_DEVICE = 11,      /* handle belongs to another device */
  XHAL_BUSY = 12,              /* e.g. runtime shutdown while handles live */
  XHAL_INTERNAL = 13,
} xhal_status_t;

/* Short stable name of a status ("XHAL_OUT_OF_RANGE"); never NULL. */
XHAL_API const char* xhal_status_name(xhal_status_t status);

/* Message of this thread's last xhal call: what was wrong if it failed, ""
 * if it returned XHAL_OK (every call clears it first). The pointer stays
 * valid until the next xhal call on this thread. */
XHAL_API const char* xhal_last_error(void);

#ifdef __cplusplus
}
#endif
#endif
