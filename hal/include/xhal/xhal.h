/* xhal: the app ABI. Include this one header. */
#ifndef XHAL_XHAL_H_
#define XHAL_XHAL_H_
#include "xhal/status.h"
#include "xhal/types.h"
#include "xhal/runtime.h"
#include "xhal/device.h"
#include "xhal/buffer.h"
#include "xhal/tensor.h"
#include "xhal/ops.h"
#include "xhal/sparse.h"
#include "xhal/interop.h"
#endif
