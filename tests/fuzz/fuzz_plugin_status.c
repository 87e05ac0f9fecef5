/* The fuzzed plugin's statuses may lie outside the enum (docs/abi.md: the
 * core turns those into XHAL_PLUGIN_ERROR). C converts any int to the enum;
 * in C++ reading such a value out of memory is undefined behaviour that
 * UBSan would report in the plugin instead of the core. */
#include <stdint.h>

#include "xhal/status.h"

xhal_status_t xhal_fuzz_raw_status(uint32_t bits) { return (xhal_status_t)bits; }
