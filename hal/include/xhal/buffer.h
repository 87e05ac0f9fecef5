/* Device buffers: untyped bytes in a device's memory.
 * Writes and reads are ordered with the device's queue and blocking: when
 * xhal_buffer_write returns, `src` may be reused; when xhal_buffer_read
 * returns, `dst` holds the data. Copies and fills are queued. A range that
 * does not fit is XHAL_OUT_OF_RANGE and nothing is written. */
#ifndef XHAL_BUFFER_H_
#define XHAL_BUFFER_H_

#include "xhal/device.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct xhal_buffer* xhal_buffer_t;

/* size may be 0 (a valid, empty buffer). */
XHAL_API xhal_status_t xhal_buffer_allocate(xhal_device_t device, uint64_t size,
                                            xhal_buffer_t* out_buffer);
XHAL_API xhal_status_t xhal_buffer_release(xhal_buffer_t buffer);
XHAL_API xhal_status_t xhal_buffer_size(xhal_buffer_t buffer, uint64_t* out_size);
XHAL_API xhal_status_t xhal_buffer_device(xhal_buffer_t buffer, xhal_device_t* out_device);

XHAL_API xhal_status_t xhal_buffer_write(xhal_buffer_t dst, uint64_t dst_offset, const void* src,
                                         uint64_t size);
XHAL_API xhal_status_t xhal_buffer_read(xhal_buffer_t src, uint64_t src_offset, void* dst,
                                        uint64_t size);
/* Device-to-device copy within one device; ranges may not overlap when
 * src == dst (XHAL_ALIASING). */
XHAL_API xhal_status_t xhal_buffer_copy(xhal_buffer_t src, uint64_t src_offset, xhal_buffer_t dst,
                                        uint64_t dst_offset, uint64_t size);
/* Repeats a 1, 2, 4 or 8-byte pattern; offset and size must be multiples of
 * pattern_size. */
XHAL_API xhal_status_t xhal_buffer_fill(xhal_buffer_t dst, uint64_t offset, uint64_t size,
                                        const void* pattern, uint32_t pattern_size);

#ifdef __cplusplus
}
#endif
#endif
