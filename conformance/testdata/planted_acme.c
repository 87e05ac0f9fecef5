/* The vendor kit's sample plugin (samples/plugin-template/acme_plugin.c) with
 * one planted contract bug, chosen by a PLANT_* definition, for the ctests
 * conformance.planted.* (docs/conformance.md "Mutation checks"). Each bug
 * leaves every result bit-exact, so only the contract check named in the
 * test can catch it. Without a PLANT_* it is the sample as shipped.
 *   PLANT_INPLACE_HOST_ROUND_TRIP  softmax_forward in place goes through host
 *                                  memory (a read and a write, counted)
 *   PLANT_NO_LAUNCH_COUNT          kernel_launches stays 0
 *   PLANT_SILENT_PLAN_UPLOAD       index_plan_create's upload is not counted
 *   PLANT_BAD_STABLE_ID            stable id "acme sim/0" (a space and a '/')
 *   PLANT_NO_MEMORY_BYTES          memory_bytes 0
 *   PLANT_INFO_PAST_STRUCT_SIZE    device_get_info writes past struct_size */
#define xhal_plugin_get_api acme_sample_get_api
#include "acme_plugin.c"
#undef xhal_plugin_get_api

static xhal_plugin_api_t g_planted;

#ifdef PLANT_INPLACE_HOST_ROUND_TRIP
static xhal_status_t planted_softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                                             const xhal_plugin_tensor_t* y) {
  if (x->buffer == y->buffer && x->offset == y->offset) {
    const uint64_t bytes = (uint64_t)x->shape[0] * (uint64_t)x->shape[1] * sizeof(float);
    void* host = malloc((size_t)bytes);
    if (!host) return XHAL_OUT_OF_MEMORY;
    acme_buffer_read(device, x->buffer, x->offset, host, bytes);
    acme_buffer_write(device, x->buffer, x->offset, host, bytes);
    free(host);
  }
  return acme_softmax_forward(device, x, y);
}
#endif

#ifdef PLANT_NO_LAUNCH_COUNT
static xhal_status_t planted_get_counters(void* device, xhal_counters_t* out) {
  xhal_status_t s = acme_device_get_counters(device, out);
  out->kernel_launches = 0;
  return s;
}
#endif

#ifdef PLANT_SILENT_PLAN_UPLOAD
static xhal_status_t planted_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                         void** out_plan) {
  const xhal_counters_t before = ((acme_device_t*)device)->counters;
  xhal_status_t s = acme_index_plan_create(device, desc, out_plan);
  ((acme_device_t*)device)->counters.host_to_device_transfers = before.host_to_device_transfers;
  ((acme_device_t*)device)->counters.host_to_device_bytes = before.host_to_device_bytes;
  return s;
}
#endif

#if defined(PLANT_BAD_STABLE_ID) || defined(PLANT_NO_MEMORY_BYTES) || \
    defined(PLANT_INFO_PAST_STRUCT_SIZE)
static xhal_status_t planted_get_info(void* context, uint32_t index,
                                      xhal_plugin_device_info_t* out) {
  xhal_status_t s = acme_device_get_info(context, index, out);
#ifdef PLANT_BAD_STABLE_ID
  snprintf(out->stable_id, sizeof out->stable_id, "acme sim/%u", index);
#endif
#ifdef PLANT_NO_MEMORY_BYTES
  out->memory_bytes = 0;
#endif
#ifdef PLANT_INFO_PAST_STRUCT_SIZE
  /* As a plugin built with a longer op_dtypes would: one more entry. */
  memset((char*)out + out->struct_size, 0x01, 4);
#endif
  return s;
}
#endif

XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) {
  if (g_planted.struct_size) return &g_planted;
  g_planted = *acme_sample_get_api();
#ifdef PLANT_INPLACE_HOST_ROUND_TRIP
  g_planted.softmax_forward = planted_softmax_forward;
#endif
#ifdef PLANT_NO_LAUNCH_COUNT
  g_planted.device_get_counters = planted_get_counters;
#endif
#ifdef PLANT_SILENT_PLAN_UPLOAD
  g_planted.index_plan_create = planted_plan_create;
#endif
#if defined(PLANT_BAD_STABLE_ID) || defined(PLANT_NO_MEMORY_BYTES) || \
    defined(PLANT_INFO_PAST_STRUCT_SIZE)
  g_planted.device_get_info = planted_get_info;
#endif
  return &g_planted;
}
