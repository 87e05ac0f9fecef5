/* libxhal-acme.so: a complete xhal backend plugin in plain C, built out of
 * tree against the installed package (find_package(xhal) and its plugin
 * helper, or pkg-config xhal-plugin). It is the vendor kit's starting point:
 * copy this folder, rename "acme", replace the host-memory "device" below by
 * your hardware, and keep `xhal-conformance` green
 * (docs/plugin-guide.md walks through it).
 *
 * What it implements:
 *   - every required slot (lifecycle, one device, counters, buffers);
 *   - index plans and index_select for every dtype (rows moved as bytes);
 *   - softmax_forward for f32 in the canonical order of docs/semantics.md
 *     (section 2 xhal_exp, 3.1 tree, 3.2 lanes and chunks, 3.3 softmax).
 * Every other op slot stays NULL: the core reports those ops unsupported on
 * this device, and the conformance report lists them as "unsupported".
 *
 * The "device" is host memory, so this plugin is a model of the contract,
 * not of speed: a real backend uploads in buffer_write/index_plan_create,
 * launches kernels in its ops, and reports the same counters. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xhal/xhal_plugin.h>

#define ACME_BACKEND "acme" /* must match the file name libxhal-acme.so */
#define ACME_VERSION "0.1.0"
#define ACME_ALIGN 64 /* the core promises ops 64-byte aligned buffers */

/* ---- state ---------------------------------------------------------------- */

static const xhal_plugin_host_t* g_host; /* from init, valid until shutdown */

/* An open device. The core calls the slots of one device one at a time, so
 * its counters need no lock (docs/abi.md "Threading"). */
typedef struct acme_device {
  xhal_counters_t counters;
} acme_device_t;

typedef struct acme_buffer {
  unsigned char* bytes;
  uint64_t size;
} acme_buffer_t;

/* An index plan "uploaded" to the device: the validated indices, copied
 * once at creation (index_select then reads only device memory). */
typedef struct acme_plan {
  int64_t* indices;
  uint64_t count;
} acme_plan_t;

/* Says why a slot failed: the app reads "acme plugin: <slot>: <message>"
 * from xhal_last_error(). */
static void fail_message(const char* message) {
  if (g_host && g_host->set_error) g_host->set_error(message);
}

/* The slots receive only what docs/plugin-guide.md "What each slot
 * receives" promises; a plugin may rely on it. This one checks it anyway, so
 * that running the conformance suite on it also checks the core. */
static xhal_status_t contract_broken(const char* what) {
  char text[256];
  snprintf(text, sizeof text, "the core broke the slot contract: %s", what);
  fail_message(text);
  return XHAL_INTERNAL;
}

static uint32_t dtype_size(xhal_dtype_t dtype) {
  switch (dtype) {
    case XHAL_DTYPE_F32:
    case XHAL_DTYPE_I32:
      return 4;
    case XHAL_DTYPE_F16:
    case XHAL_DTYPE_BF16:
      return 2;
    case XHAL_DTYPE_I64:
    case XHAL_DTYPE_F64:
      return 8;
    case XHAL_DTYPE_U8:
      return 1;
    default:
      return 0;
  }
}

/* Contiguous row-major rank-2 tensor [rows, n] with rows, n >= 1. */
static int is_dense_matrix(const xhal_plugin_tensor_t* t) {
  return t->rank == 2 && t->shape[0] >= 1 && t->shape[1] >= 1 && t->strides[1] == 1 &&
         t->strides[0] == t->shape[1];
}

static unsigned char* tensor_bytes(const xhal_plugin_tensor_t* t) {
  return ((acme_buffer_t*)t->buffer)->bytes + t->offset;
}

/* ---- lifecycle and devices ------------------------------------------------ */

static xhal_status_t acme_init(const xhal_plugin_host_t* host, void** out_context, char* out_note,
                               size_t note_capacity) {
  g_host = host;
  *out_context = NULL; /* no plugin-wide state */
  if (out_note && note_capacity) out_note[0] = '\0';
  /* A backend that finds no hardware returns XHAL_OK with 0 devices and a
   * note ("no ACME card found"), which xhal-info prints. */
  return XHAL_OK;
}

static void acme_shutdown(void* context) {
  (void)context;
  g_host = NULL;
}

static xhal_status_t acme_device_count(void* context, uint32_t* out_count) {
  (void)context;
  *out_count = 1;
  return XHAL_OK;
}

/* memory_bytes: the memory the device's buffers come from, here the
 * machine's physical memory (docs/plugin-guide.md "Device info"). */
static uint64_t physical_memory_bytes(void) {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || page_size <= 0) return 0;
  return (uint64_t)pages * (uint64_t)page_size;
}

static xhal_status_t acme_device_get_info(void* context, uint32_t index,
                                          xhal_plugin_device_info_t* out) {
  xhal_plugin_device_info_t info;
  size_t limit;
  const uint32_t every_dtype = (1u << XHAL_DTYPE_F32) | (1u << XHAL_DTYPE_F16) |
                               (1u << XHAL_DTYPE_BF16) | (1u << XHAL_DTYPE_I32) |
                               (1u << XHAL_DTYPE_I64) | (1u << XHAL_DTYPE_U8) |
                               (1u << XHAL_DTYPE_F64);
  (void)context;
  if (index != 0) {
    fail_message("device index out of range (1 device)");
    return XHAL_OUT_OF_RANGE;
  }
  memset(&info, 0, sizeof info);
  snprintf(info.name, sizeof info.name, "ACME simulator (host memory)");
  /* Letters, digits and _ - . : only, not all digits, one per device, the
   * same on every run: a selector names the device by it
   * (XHAL_DEVICE=acme:acme:sim-0). */
  snprintf(info.stable_id, sizeof info.stable_id, "acme:sim-%u", index);
  info.kind = XHAL_DEVICE_KIND_OTHER;
  info.memory_bytes = physical_memory_bytes();
  /* The dtypes of each op this plugin implements; every other op stays 0. */
  info.op_dtypes[XHAL_OP_INDEX_SELECT] = every_dtype;
  info.op_dtypes[XHAL_OP_SOFTMAX_FORWARD] = 1u << XHAL_DTYPE_F32;
  /* Write only what lies inside the struct_size the core gave (a core
   * built with an older header has a shorter struct); struct_size itself
   * belongs to the core. */
  limit = out->struct_size < sizeof info ? out->struct_size : sizeof info;
  if (limit > sizeof info.struct_size)
    memcpy((char*)out + sizeof info.struct_size, (const char*)&info + sizeof info.struct_size,
           limit - sizeof info.struct_size);
  return XHAL_OK;
}

static xhal_status_t acme_device_open(void* context, uint32_t index, void** out_device) {
  acme_device_t* d;
  (void)context;
  if (index != 0) {
    fail_message("device index out of range (1 device)");
    return XHAL_OUT_OF_RANGE;
  }
  d = calloc(1, sizeof *d);
  if (!d) return XHAL_OUT_OF_MEMORY;
  *out_device = d;
  return XHAL_OK;
}

static void acme_device_close(void* device) { free(device); }

/* Every slot here finishes its work before it returns; a real device waits
 * for its queue and reports an asynchronous fault as XHAL_DEVICE_LOST. */
static xhal_status_t acme_device_synchronize(void* device) {
  (void)device;
  return XHAL_OK;
}

static xhal_status_t acme_device_get_counters(void* device, xhal_counters_t* out) {
  *out = ((acme_device_t*)device)->counters;
  return XHAL_OK;
}

/* Counting rules (docs/plugin-guide.md "Counters"): every copy between the
 * caller's host memory and device memory is a transfer, with its bytes;
 * every unit of device work an op or a copy/fill starts is a launch. */
static void count_upload(void* device, uint64_t bytes) {
  acme_device_t* d = device;
  d->counters.host_to_device_transfers += 1;
  d->counters.host_to_device_bytes += bytes;
}

static void count_download(void* device, uint64_t bytes) {
  acme_device_t* d = device;
  d->counters.device_to_host_transfers += 1;
  d->counters.device_to_host_bytes += bytes;
}

static void count_launch(void* device) { ((acme_device_t*)device)->counters.kernel_launches += 1; }

/* ---- buffers (ranges are validated by the core) --------------------------- */

static xhal_status_t acme_buffer_allocate(void* device, uint64_t size, void** out_buffer) {
  acme_buffer_t* b;
  uint64_t rounded = (size + ACME_ALIGN - 1) / ACME_ALIGN * ACME_ALIGN;
  (void)device;
  if (rounded == 0) rounded = ACME_ALIGN; /* size 0 is a valid buffer */
  if (rounded < size || rounded > (uint64_t)SIZE_MAX) {
    fail_message("buffer larger than the address space");
    return XHAL_OUT_OF_MEMORY;
  }
  b = malloc(sizeof *b);
  if (!b) return XHAL_OUT_OF_MEMORY;
  b->bytes = aligned_alloc(ACME_ALIGN, (size_t)rounded);
  if (!b->bytes) {
    free(b);
    fail_message("out of device memory"); /* never abort: a status */
    return XHAL_OUT_OF_MEMORY;
  }
  b->size = size;
  *out_buffer = b;
  return XHAL_OK;
}

static void acme_buffer_free(void* device, void* buffer) {
  acme_buffer_t* b = buffer;
  (void)device;
  free(b->bytes);
  free(b);
}

static xhal_status_t acme_buffer_write(void* device, void* dst, uint64_t offset, const void* src,
                                       uint64_t size) {
  memcpy(((acme_buffer_t*)dst)->bytes + offset, src, (size_t)size);
  count_upload(device, size);
  return XHAL_OK;
}

static xhal_status_t acme_buffer_read(void* device, void* src, uint64_t offset, void* dst,
                                      uint64_t size) {
  memcpy(dst, ((acme_buffer_t*)src)->bytes + offset, (size_t)size);
  count_download(device, size);
  return XHAL_OK;
}

static xhal_status_t acme_buffer_copy(void* device, void* src, uint64_t src_offset, void* dst,
                                      uint64_t dst_offset, uint64_t size) {
  /* Device to device: no host transfer. The ranges never overlap (the core
   * refuses that), but they may lie in one buffer. */
  memmove(((acme_buffer_t*)dst)->bytes + dst_offset, ((acme_buffer_t*)src)->bytes + src_offset,
          (size_t)size);
  count_launch(device);
  return XHAL_OK;
}

static xhal_status_t acme_buffer_fill(void* device, void* dst, uint64_t offset, uint64_t size,
                                      const void* pattern, uint32_t pattern_size) {
  unsigned char* at = ((acme_buffer_t*)dst)->bytes + offset;
  uint64_t i;
  /* The core guarantees offset and size are multiples of pattern_size (1, 2,
   * 4 or 8). */
  for (i = 0; i < size; i += pattern_size) memcpy(at + i, pattern, pattern_size);
  count_launch(device);
  return XHAL_OK;
}

/* ---- index plans and index_select ----------------------------------------- */

/* The core hands over validated host arrays; a plan is uploaded here, once,
 * and that upload moves the transfer counters. Only the indices are needed
 * for index_select (index_add would also keep desc->row_sources and the
 * touched rows). A plan of count 0 is valid and uploads nothing. */
static xhal_status_t acme_index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                            void** out_plan) {
  acme_plan_t* p = calloc(1, sizeof *p);
  if (!p) return XHAL_OUT_OF_MEMORY;
  p->count = desc->count;
  if (desc->count > 0) {
    const uint64_t bytes = desc->count * sizeof(int64_t);
    p->indices = malloc((size_t)bytes);
    if (!p->indices) {
      free(p);
      return XHAL_OUT_OF_MEMORY;
    }
    memcpy(p->indices, desc->indices, (size_t)bytes);
    count_upload(device, bytes);
  }
  *out_plan = p;
  return XHAL_OK;
}

static void acme_index_plan_destroy(void* device, void* plan) {
  acme_plan_t* p = plan;
  (void)device;
  free(p->indices);
  free(p);
}

/* out[i, :] = src[indices[i], :], bit for bit, any dtype. */
static xhal_status_t acme_index_select(void* device, void* plan, const xhal_plugin_tensor_t* src,
                                       const xhal_plugin_tensor_t* out) {
  const acme_plan_t* p = plan;
  const uint32_t es = dtype_size(src->dtype);
  uint64_t row_bytes, i;
  const unsigned char* from;
  unsigned char* to;
  if (!is_dense_matrix(src) || !is_dense_matrix(out) || out->dtype != src->dtype || es == 0 ||
      out->shape[0] != (int64_t)p->count || out->shape[1] != src->shape[1])
    return contract_broken("index_select wants src [num_rows, w] and out [count, w], contiguous");
  row_bytes = (uint64_t)src->shape[1] * es;
  from = tensor_bytes(src);
  to = tensor_bytes(out);
  count_launch(device);
  for (i = 0; i < p->count; ++i)
    memcpy(to + i * row_bytes, from + (uint64_t)p->indices[i] * row_bytes, (size_t)row_bytes);
  return XHAL_OK;
}

/* ---- softmax_forward: the canonical order of docs/semantics.md ------------ */
/* Each helper below is one line of the spec. Compile with -ffp-contract=off
 * (the plugin helper and xhal-plugin.pc pass it): a fused multiply-add
 * changes the bits. */

#define ACME_LANES 128
#define ACME_STEPS 8
#define ACME_CHUNK (ACME_LANES * ACME_STEPS) /* 1024 */

static float bits_to_float(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* 2^j for j in [-126, 127], built from its bits (exact). */
static float exp2_int(int j) { return bits_to_float((uint32_t)(j + 127) << 23); }

/* Section 2: xhal_exp, a fixed sequence of correctly rounded operations. */
static float xhal_exp(float x) {
  static const float coeff[7] = {0x1.687c02p-10f, 0x1.123ba6p-7f, 0x1.555b5ap-5f, 0x1.55548ep-3f,
                                 0x1.fffff8p-2f,  0x1.000000p+0f, 0x1.000000p+0f};
  float t, k, r, p;
  int ki, i;
  if (x != x) return x;
  if (x > 0x1.62e42ep+6f) return bits_to_float(0x7f800000u); /* +inf */
  if (x < -0x1.9fe368p+6f) return 0.0f;
  t = x * 0x1.715476p+0f;
  k = t + 0x1.8p23f;
  k = k - 0x1.8p23f;
  r = x - k * 0x1.62e400p-1f;
  r = r - k * 0x1.7f7d1cp-20f;
  p = coeff[0];
  for (i = 1; i < 7; ++i) p = p * r + coeff[i];
  ki = (int)k;
  if (ki > 127) return (p * exp2_int(127)) * exp2_int(ki - 127);
  if (ki < -126) return (p * exp2_int(-100)) * exp2_int(ki + 100);
  return p * exp2_int(ki);
}

/* Section 1: NaN if either is NaN, else the larger. */
static float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? b : a;
}

/* Section 3.1: pad to a power of two with +0, add adjacent pairs until one
 * value is left. `v` has room for `padded` values (a power of two >= m). */
static float tree(float* v, size_t m, size_t padded) {
  size_t i, width;
  if (m == 0) return 0.0f;
  for (i = m; i < padded; ++i) v[i] = 0.0f;
  for (width = padded; width > 1; width /= 2)
    for (i = 0; i < width / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
  return v[0];
}

static size_t pow2_at_least(size_t m) {
  size_t p = 1;
  while (p < m) p *= 2;
  return p;
}

/* Section 3.3's (+) on per-chunk (max, sum) pairs. */
typedef struct stat {
  float m, s;
} stat_t;

static stat_t combine(stat_t a, stat_t b) {
  stat_t out;
  out.m = nan_max(a.m, b.m);
  if (out.m == -bits_to_float(0x7f800000u)) {
    out.s = 0.0f;
    return out;
  }
  out.s = a.s * xhal_exp(a.m - out.m) + b.s * xhal_exp(b.m - out.m);
  return out;
}

/* One row of n >= 1 elements. Scratch: e[n] (the row's exponentials, kept
 * between the sum and the write, so y may be x: in place), cm[chunks] and
 * st[pow2_at_least(chunks)]. */
static void softmax_row(const float* x, float* y, size_t n, float* e, float* cm, stat_t* st) {
  const float neg_inf = -bits_to_float(0x7f800000u);
  const size_t chunks = (n + ACME_CHUNK - 1) / ACME_CHUNK;
  const size_t padded = pow2_at_least(chunks);
  float lanes[ACME_LANES];
  float inv;
  size_t c, i, l, t, width;
  for (c = 0; c < chunks; ++c) {
    const size_t begin = c * ACME_CHUNK, end = begin + ACME_CHUNK < n ? begin + ACME_CHUNK : n;
    float m = neg_inf;
    for (i = begin; i < end; ++i) m = nan_max(m, x[i]);
    for (i = begin; i < end; ++i) e[i] = m == neg_inf ? 0.0f : xhal_exp(x[i] - m);
    /* Lane l adds the chunk's elements t*128 + l, t = 0..7, in order (3.2);
     * padding adds nothing. */
    for (l = 0; l < ACME_LANES; ++l) {
      lanes[l] = 0.0f;
      for (t = 0; t < ACME_STEPS; ++t) {
        i = begin + t * ACME_LANES + l;
        if (i < n) lanes[l] = lanes[l] + e[i];
      }
    }
    cm[c] = m;
    st[c].m = m;
    st[c].s = tree(lanes, ACME_LANES, ACME_LANES);
  }
  /* The chunks' (m, s) by the pairwise tree, padded with (-inf, +0). */
  for (c = chunks; c < padded; ++c) {
    st[c].m = neg_inf;
    st[c].s = 0.0f;
  }
  for (width = padded; width > 1; width /= 2)
    for (c = 0; c < width / 2; ++c) st[c] = combine(st[2 * c], st[2 * c + 1]);
  /* One scale per chunk; its outputs reuse the chunk's exponentials. */
  inv = 1.0f / st[0].s;
  for (c = 0; c < chunks; ++c) {
    const size_t begin = c * ACME_CHUNK, end = begin + ACME_CHUNK < n ? begin + ACME_CHUNK : n;
    const float scale = xhal_exp(cm[c] - st[0].m) * inv;
    for (i = begin; i < end; ++i) y[i] = e[i] * scale;
  }
}

/* x, y: [rows, n], contiguous, f32, rows >= 1 and n >= 1 (the core never
 * calls an op slot with an empty tensor); y may be x. */
static xhal_status_t acme_softmax_forward(void* device, const xhal_plugin_tensor_t* x,
                                          const xhal_plugin_tensor_t* y) {
  size_t rows, n, chunks, r;
  float *e, *cm;
  stat_t* st;
  const float* xp;
  float* yp;
  if (!is_dense_matrix(x) || !is_dense_matrix(y) || x->dtype != XHAL_DTYPE_F32 ||
      y->dtype != XHAL_DTYPE_F32 || x->shape[0] != y->shape[0] || x->shape[1] != y->shape[1])
    return contract_broken("softmax_forward wants x and y [rows, n], f32, contiguous");
  rows = (size_t)x->shape[0];
  n = (size_t)x->shape[1];
  chunks = (n + ACME_CHUNK - 1) / ACME_CHUNK;
  e = malloc(n * sizeof *e);
  cm = malloc(chunks * sizeof *cm);
  st = malloc(pow2_at_least(chunks) * sizeof *st);
  if (!e || !cm || !st) {
    free(e);
    free(cm);
    free(st);
    return XHAL_OUT_OF_MEMORY;
  }
  xp = (const float*)tensor_bytes(x);
  yp = (float*)tensor_bytes(y);
  count_launch(device);
  for (r = 0; r < rows; ++r) softmax_row(xp + r * n, yp + r * n, n, e, cm, st);
  free(e);
  free(cm);
  free(st);
  return XHAL_OK;
}

/* ---- the table ------------------------------------------------------------ */

/* Every slot left out (NULL) is an op this plugin does not implement:
 * the core reports it unsupported and never calls it. */
static const xhal_plugin_api_t g_api = {
    .struct_size = sizeof(xhal_plugin_api_t), /* as this plugin was built */
    .abi_major = XHAL_PLUGIN_ABI_MAJOR,
    .abi_minor = XHAL_PLUGIN_ABI_MINOR,
    .backend_name = ACME_BACKEND,
    .plugin_version = ACME_VERSION,
    .init = acme_init,
    .shutdown = acme_shutdown,
    .device_count = acme_device_count,
    .device_get_info = acme_device_get_info,
    .device_open = acme_device_open,
    .device_close = acme_device_close,
    .device_synchronize = acme_device_synchronize,
    .device_get_counters = acme_device_get_counters,
    .buffer_allocate = acme_buffer_allocate,
    .buffer_free = acme_buffer_free,
    .buffer_write = acme_buffer_write,
    .buffer_read = acme_buffer_read,
    .buffer_copy = acme_buffer_copy,
    .buffer_fill = acme_buffer_fill,
    .index_plan_create = acme_index_plan_create,
    .index_plan_destroy = acme_index_plan_destroy,
    .index_select = acme_index_select,
    .softmax_forward = acme_softmax_forward,
};

/* The one exported symbol (the plugin helper's version script hides every
 * other one). */
XHAL_PLUGIN_EXPORT const xhal_plugin_api_t* xhal_plugin_get_api(void) { return &g_api; }
