#include "op_registry.h"

namespace xhal::cpu {

std::vector<OpRegistration>& op_registry() {
  // Constructed on first use: registrars of other files run in any order.
  static std::vector<OpRegistration> registry;
  return registry;
}

}  // namespace xhal::cpu
