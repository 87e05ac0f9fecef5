// Op names, slot-presence checks and the dtypes the spec allows, read from
// the op table.
#include "entry.h"
#include "internal.h"
#include "op_validate.h"

namespace xhal {

bool op_slots_present(const xhal_plugin_api_t& api, xhal_op_t op) {
  const ops::Op* row = ops::find(raw_enum(op));
  return row && op_slots_present(api, *row);
}

uint32_t spec_dtypes(xhal_op_t op) {
  const ops::Op* row = ops::find(raw_enum(op));
  if (!row) return 0;
  if (row->arg_count) return row->args[0].dtypes;
  // spgemm has no tensor: its dtypes are the matrices' value dtypes.
  return row->needs == ops::Needs::kMatrix ? ops::kF32F64 : ops::kF32;
}

const char* op_name(xhal_op_t op) {
  const ops::Op* row = ops::find(raw_enum(op));
  return row ? row->name : "unknown";
}

}  // namespace xhal

extern "C" const char* xhal_op_name(xhal_op_t op) { return xhal::op_name(op); }
