// The cpu plugin's stable ids (docs/device-selection.md, "Stable ids").
#pragma once

#include <cstdint>
#include <string>

namespace xhal::cpu {

// "cpu:<model>" with the model reduced to what a selector's stable id may
// hold: letters, digits, '_', '-' and '.'. Every other run of characters
// ("(R) ", " @ ", ':') becomes one '-'; no '-' at either end.
//   "AMD EPYC" -> "cpu:AMD-EPYC"
//   "Intel(R) Xeon(R) CPU @ 2.20GHz" -> "cpu:Intel-R-Xeon-R-CPU-2.20GHz"
// A model with nothing left gives "cpu:unknown"; the id is cut at 100
// characters (a CPUID brand string has 48).
std::string stable_id_of(const std::string& model);

// Virtual device k > 0 (option devices=N): "<device 0's id>:virtual-<k>",
// selectable like any other id: XHAL_DEVICE=cpu:cpu:AMD-EPYC:virtual-1.
std::string virtual_stable_id(const std::string& id0, uint32_t k);

}  // namespace xhal::cpu
