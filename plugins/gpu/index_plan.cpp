// index_plan_create / index_plan_destroy: the plan and index_add's schedule
// are built on the host from the touched rows (O(count)) and uploaded once.
#include <new>
#include <vector>

#include "index_plan.h"

namespace xhal::gpu {

void free_plan(Plan* p) {
  for (void* q : {static_cast<void*>(p->indices), static_cast<void*>(p->row_sources),
                  static_cast<void*>(p->direct), static_cast<void*>(p->chunk_begin),
                  static_cast<void*>(p->chunk_len), static_cast<void*>(p->long_rows),
                  static_cast<void*>(p->long_base), static_cast<void*>(p->group_triples)})
    if (q) gpuFree(q);
  delete p;
}

namespace {

template <class T>
xhal_status_t up(Device* d, const std::vector<T>& v, T** out) {
  void* p = nullptr;
  xhal_status_t st = upload(d, v.data(), v.size() * sizeof(T), &p);
  *out = static_cast<T*>(p);
  return st;
}

}  // namespace

xhal_status_t index_plan_create(void* device, const xhal_plugin_index_plan_desc_t* desc,
                                void** out_plan) {
  Device* d = enter(device);
  auto* p = new Plan;
  p->count = static_cast<int64_t>(desc->count);
  p->num_rows = static_cast<int64_t>(desc->num_rows);
  const int64_t n = p->count;
  xhal_status_t st = XHAL_OK;
  try {
    const int64_t* touched_rows = desc->touched_rows;
    const int64_t* touched_ptr = desc->touched_ptr;
    uint64_t touched_count = 0;
    std::vector<int64_t> rows_from_full, ptr_from_full;
    if (desc->row_ptr == nullptr) {
      touched_count = desc->touched_count;  // the compact form of a 1.1 core
    } else {
      // A 1.0 core passes only row_ptr over every row (its desc has no
      // touched_* fields): list the touched rows from it.
      touched_from_row_ptr(desc->row_ptr, desc->num_rows, &rows_from_full, &ptr_from_full);
      touched_rows = rows_from_full.data();
      touched_ptr = ptr_from_full.data();
      touched_count = rows_from_full.size();
    }
    const IndexAddSchedule sch =
        build_index_add_schedule(touched_rows, touched_ptr, touched_count, desc->row_sources);
    p->group_offsets = sch.group_offsets;
    p->num_direct = static_cast<int64_t>(sch.direct.size());
    p->num_chunks = static_cast<int64_t>(sch.chunk_begin.size());
    p->num_long = static_cast<int64_t>(sch.long_rows.size());
    const std::vector<int64_t> idx(desc->indices, desc->indices + n);
    const std::vector<int64_t> srcs(desc->row_sources, desc->row_sources + n);
    if (st == XHAL_OK) st = up(d, idx, &p->indices);
    if (st == XHAL_OK) st = up(d, srcs, &p->row_sources);
    if (st == XHAL_OK) st = up(d, sch.direct, &p->direct);
    if (st == XHAL_OK) st = up(d, sch.chunk_begin, &p->chunk_begin);
    if (st == XHAL_OK) st = up(d, sch.chunk_len, &p->chunk_len);
    if (st == XHAL_OK) st = up(d, sch.long_rows, &p->long_rows);
    if (st == XHAL_OK) st = up(d, sch.long_base, &p->long_base);
    if (st == XHAL_OK) st = up(d, sch.group_triples, &p->group_triples);
  } catch (const std::bad_alloc&) {
    st = fail(XHAL_OUT_OF_MEMORY, "out of host memory building the index plan");
  }
  if (st != XHAL_OK) {
    free_plan(p);
    return st;
  }
  *out_plan = p;
  return XHAL_OK;
}

void index_plan_destroy(void* device, void* plan) {
  Device* d = enter(device);
  gpuStreamSynchronize(d->stream);
  free_plan(static_cast<Plan*>(plan));
}

}  // namespace xhal::gpu
