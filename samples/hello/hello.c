/* hello: the smallest complete xhal program. Opens the default device
 * (XHAL_DEVICE=cpu ./xhal-hello picks one), writes data, copies it on the
 * device, reads it back, checks it, and says which device did the work.
 * Exits non-zero with xhal_last_error() on any failure. */
#include <stdio.h>
#include <string.h>

#include <xhal/xhal.h>

#define COUNT 4096

#define CHECK(call)                                                                   \
  do {                                                                                \
    xhal_status_t status_ = (call);                                                   \
    if (status_ != XHAL_OK) {                                                         \
      fprintf(stderr, "hello: %s failed: %s: %s\n", #call, xhal_status_name(status_), \
              xhal_last_error());                                                     \
      goto cleanup;                                                                   \
    }                                                                                 \
  } while (0)

int main(void) {
  int exit_code = 1;
  xhal_device_t device = NULL;
  xhal_buffer_t source = NULL, copy = NULL;
  static float input[COUNT], output[COUNT];
  const uint64_t bytes = sizeof(input);
  xhal_device_info_t info;
  int i;

  for (i = 0; i < COUNT; ++i) input[i] = (float)i * 0.5f - 7.0f;

  CHECK(xhal_device_open(NULL, &device)); /* NULL: the default device */
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  CHECK(xhal_device_query(device, &info));
  printf("device: %s:%u \"%s\" (stable id %s)\n", info.backend, info.backend_index, info.name,
         info.stable_id);

  CHECK(xhal_buffer_allocate(device, bytes, &source));
  CHECK(xhal_buffer_allocate(device, bytes, &copy));
  CHECK(xhal_buffer_write(source, 0, input, bytes));
  CHECK(xhal_buffer_copy(source, 0, copy, 0, bytes));
  CHECK(xhal_device_synchronize(device));
  CHECK(xhal_buffer_read(copy, 0, output, bytes));

  for (i = 0; i < COUNT; ++i) {
    if (memcmp(&input[i], &output[i], sizeof(float)) != 0) {
      fprintf(stderr, "hello: element %d is %g after the round trip, expected %g\n", i,
              (double)output[i], (double)input[i]);
      goto cleanup;
    }
  }
  printf("hello: wrote, copied on the device and read back %d floats: all equal\n", COUNT);
  exit_code = 0;

cleanup:
  if (copy) xhal_buffer_release(copy);
  if (source) xhal_buffer_release(source);
  if (device) xhal_device_release(device);
  return exit_code;
}
