// Runner-side configuration shared by main.cpp and harness.cpp.
#pragma once

#include <vector>

#include "harness.h"

namespace xhal::conf {

// Set by main() before InitGoogleTest (which evaluates the device lists of
// XHAL_CONF_INSTANTIATE).
void set_selected_devices(std::vector<DeviceParam> devices);

// --require-bit-exact: an op result that is only accurate fails the test.
void set_require_bit_exact(bool on);
bool require_bit_exact();

}  // namespace xhal::conf
