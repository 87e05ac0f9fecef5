// Builds the GPU index_add schedule (index_schedule.h).
#include "index_schedule.h"

#include <algorithm>

namespace xhal::gpu {

IndexAddSchedule build_index_add_schedule(const int64_t* touched_rows, const int64_t* touched_ptr,
                                          uint64_t touched_count, const int64_t* row_sources) {
  IndexAddSchedule s;
  std::vector<int64_t> chunks;  // chunks per long row
  for (uint64_t k = 0; k < touched_count; ++k) {
    const int64_t r = touched_rows[k], e0 = touched_ptr[k], e1 = touched_ptr[k + 1];
    const int64_t m = e1 - e0;
    if (m <= kIndexChunk) {
      s.direct.push_back(direct_row(r, row_sources, e0, m));
      continue;
    }
    s.long_rows.push_back(r);
    s.long_base.push_back(static_cast<int64_t>(s.chunk_begin.size()));
    chunks.push_back((m + kIndexChunk - 1) / kIndexChunk);
    for (int64_t b = e0; b < e1; b += kIndexChunk) {
      s.chunk_begin.push_back(b);
      s.chunk_len.push_back(static_cast<int32_t>(std::min(kIndexChunk, e1 - b)));
    }
  }
  // Each round turns every long row's values into ceil(values / 32), until
  // all rows are down to one; the rows' slots never overlap, since a row
  // starts with as many slots as it has chunks and only shrinks.
  for (;;) {
    bool more = false;
    for (const int64_t c : chunks) more = more || c > 1;
    if (!more) break;
    for (size_t k = 0; k < chunks.size(); ++k) {
      const int64_t base = s.long_base[k], c = chunks[k];
      for (int64_t g = 0; g < (c + kIndexChunk - 1) / kIndexChunk; ++g)
        s.group_triples.insert(
            s.group_triples.end(),
            {base + kIndexChunk * g, std::min(kIndexChunk, c - kIndexChunk * g), base + g});
      chunks[k] = (c + kIndexChunk - 1) / kIndexChunk;
    }
    s.group_offsets.push_back(static_cast<int64_t>(s.group_triples.size() / 3));
  }
  return s;
}

void touched_from_row_ptr(const int64_t* row_ptr, uint64_t num_rows, std::vector<int64_t>* rows,
                          std::vector<int64_t>* ptr) {
  rows->clear();
  ptr->assign(1, row_ptr[0]);
  for (uint64_t r = 0; r < num_rows; ++r)
    if (row_ptr[r + 1] > row_ptr[r]) {
      rows->push_back(static_cast<int64_t>(r));
      ptr->push_back(row_ptr[r + 1]);
    }
}

}  // namespace xhal::gpu
