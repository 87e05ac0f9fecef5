/* xhal: the app ABI. Include this one header. */
#ifndef XHAL_XHAL_H_
#define XHAL_XHAL_H_
#include "xhal/buffer.h"
#include "xhal/device.h"
#include "xhal/interop.h"
#include "xhal/ops.h"
#include "xhal/runtime.h"
#include "xhal/sparse.h"
#include "xhal/status.h"
#include "xhal/tensor.h"
#include "xhal/types.h"
#endif
