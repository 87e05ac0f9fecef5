// The GPU plugin's index_add schedule (plugins/gpu/index_schedule.cpp),
// checked here without a GPU: its layout on a small case, that it depends on
// the touched rows only (the same from the compact form and from a 1.0
// core's full row_ptr, and O(count) into 2^40 rows), and, by running the
// kernels' arithmetic on the host in the kernels' order, that it reproduces
// docs/semantics.md 3.7 bit for bit, hub rows of one to three tree rounds
// included.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "index_schedule.h"

namespace xhal::gpu {
namespace {

// Sources grouped by touched row, as the core passes them.
struct Selection {
  std::vector<int64_t> rows, ptr{0}, sources;
};
Selection select(const std::vector<int64_t>& idx) {
  std::map<int64_t, std::vector<int64_t>> by_row;
  for (size_t i = 0; i < idx.size(); ++i) by_row[idx[i]].push_back(static_cast<int64_t>(i));
  Selection s;
  for (const auto& [row, list] : by_row) {
    s.rows.push_back(row);
    s.sources.insert(s.sources.end(), list.begin(), list.end());
    s.ptr.push_back(static_cast<int64_t>(s.sources.size()));
  }
  return s;
}

IndexAddSchedule schedule_of(const Selection& s) {
  return build_index_add_schedule(s.rows.data(), s.ptr.data(), s.rows.size(), s.sources.data());
}

std::vector<int64_t> flat(const std::vector<DirectRow>& v) {
  std::vector<int64_t> out;
  for (const DirectRow& d : v)
    out.insert(out.end(),
               {d.r, d.first, d.second, d.e0m >> kDirectCountBits, d.e0m & kDirectCountMask});
  return out;
}

TEST(GpuIndexSchedule, LayoutOfASmallCase) {
  // Row 3: one source; row 7: 40 sources (two chunks); row 2^40 - 1: two.
  const int64_t top = (int64_t{1} << 40) - 1;
  std::vector<int64_t> idx = {top, 3};
  idx.insert(idx.end(), 40, 7);
  idx.push_back(top);
  const IndexAddSchedule s = schedule_of(select(idx));
  // Sources: row 3 {1} at 0, row 7 {2..41} at 1, row top {0, 42} at 41.
  EXPECT_EQ(flat(s.direct), (std::vector<int64_t>{3, 1, -1, 0, 1, top, 0, 42, 41, 2}));
  EXPECT_EQ(s.long_rows, (std::vector<int64_t>{7}));
  EXPECT_EQ(s.long_base, (std::vector<int64_t>{0}));
  EXPECT_EQ(s.chunk_begin, (std::vector<int64_t>{1, 33}));
  EXPECT_EQ(s.chunk_len, (std::vector<int32_t>{32, 8}));
  EXPECT_EQ(s.group_triples, (std::vector<int64_t>{0, 2, 0}));
  EXPECT_EQ(s.group_offsets, (std::vector<int64_t>{0, 1}));
}

TEST(GpuIndexSchedule, FullRowPtrOfAnOldCoreGivesTheSameSchedule) {
  std::mt19937 rng(4);
  std::vector<int64_t> idx;
  for (int i = 0; i < 3000; ++i) idx.push_back(rng() % 500);
  idx.insert(idx.end(), 2000, 250);
  std::shuffle(idx.begin(), idx.end(), rng);
  const Selection sel = select(idx);
  std::vector<int64_t> row_ptr(500 + 1, 0);
  for (const int64_t r : idx) ++row_ptr[r + 1];
  for (int r = 0; r < 500; ++r) row_ptr[r + 1] += row_ptr[r];
  std::vector<int64_t> rows, ptr;
  touched_from_row_ptr(row_ptr.data(), 500, &rows, &ptr);
  EXPECT_EQ(rows, sel.rows);
  EXPECT_EQ(ptr, sel.ptr);
  const IndexAddSchedule a = schedule_of(sel);
  const IndexAddSchedule b =
      build_index_add_schedule(rows.data(), ptr.data(), rows.size(), sel.sources.data());
  EXPECT_EQ(flat(a.direct), flat(b.direct));
  EXPECT_EQ(a.chunk_begin, b.chunk_begin);
  EXPECT_EQ(a.chunk_len, b.chunk_len);
  EXPECT_EQ(a.long_rows, b.long_rows);
  EXPECT_EQ(a.long_base, b.long_base);
  EXPECT_EQ(a.group_triples, b.group_triples);
  EXPECT_EQ(a.group_offsets, b.group_offsets);
}

TEST(GpuIndexSchedule, SizeFollowsTheIndicesNotTheTable) {
  // 1000 indices into 2^40 rows, 300 of them on one hub row.
  std::mt19937_64 rng(8);
  std::vector<int64_t> idx;
  for (int i = 0; i < 700; ++i) idx.push_back(static_cast<int64_t>(rng() % (uint64_t{1} << 40)));
  idx.insert(idx.end(), 300, 12345);
  const Selection sel = select(idx);
  const IndexAddSchedule s = schedule_of(sel);
  EXPECT_EQ(s.direct.size() + s.long_rows.size(), sel.rows.size());
  EXPECT_EQ(s.long_rows, (std::vector<int64_t>{12345}));
  EXPECT_EQ(s.chunk_begin.size(), 10u);  // ceil(300 / 32)
  EXPECT_EQ(s.group_triples.size(), 3u);
}

// ---- the kernels' arithmetic on the host ---------------------------------------
// docs/semantics.md 3.7: chunks of 32 summed from +0, then the pairwise tree
// over the chunk sums padded with +0 to a power of two.
float segsum(const std::vector<float>& t) {
  std::vector<float> chunks;
  for (size_t b = 0; b < t.size(); b += 32) {
    float c = 0.0f;
    for (size_t k = b; k < std::min(t.size(), b + 32); ++k) c = c + t[k];
    chunks.push_back(c);
  }
  size_t n = 1;
  while (n < chunks.size()) n *= 2;
  chunks.resize(n, 0.0f);
  for (; n > 1; n /= 2)
    for (size_t i = 0; i < n / 2; ++i) chunks[i] = chunks[2 * i] + chunks[2 * i + 1];
  return chunks[0];
}

// What add_direct_rec_kernel, add_chunks_batched_kernel, add_groups_kernel
// and add_long_apply_kernel compute, element by element, in their order.
void run_schedule(const IndexAddSchedule& s, const std::vector<int64_t>& sources,
                  const std::vector<float>& src, std::vector<float>& dst, int64_t w, float alpha) {
  for (const DirectRow& d : s.direct)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t e0 = d.e0m >> kDirectCountBits, m = d.e0m & kDirectCountMask;
      float sum = 0.0f + src[d.first * w + j];
      if (m > 1) sum = sum + src[d.second * w + j];
      for (int64_t e = e0 + 2; e < e0 + m; ++e) sum = sum + src[sources[e] * w + j];
      dst[d.r * w + j] = dst[d.r * w + j] + alpha * sum;
    }
  if (s.long_rows.empty()) return;
  const size_t chunks = s.chunk_begin.size();
  std::vector<float> buf[2] = {std::vector<float>(chunks * w), std::vector<float>(chunks * w)};
  for (size_t c = 0; c < chunks; ++c)
    for (int64_t j = 0; j < w; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < s.chunk_len[c]; ++k)
        sum = sum + src[sources[s.chunk_begin[c] + k] * w + j];
      buf[0][c * w + j] = sum;
    }
  int cur = 0;
  for (size_t g = 0; g + 1 < s.group_offsets.size(); ++g) {
    for (int64_t t = s.group_offsets[g]; t < s.group_offsets[g + 1]; ++t) {
      const int64_t first = s.group_triples[3 * t], cnt = s.group_triples[3 * t + 1],
                    out = s.group_triples[3 * t + 2];
      for (int64_t j = 0; j < w; ++j) {
        float v[32];
        for (int i = 0; i < cnt; ++i) v[i] = buf[cur][(first + i) * w + j];
        for (int d = 1; d < 32; d *= 2)
          for (int i = 0; i + d < 32; i += 2 * d)
            if (i + d < cnt) v[i] = v[i] + v[i + d];
        buf[1 - cur][out * w + j] = v[0];
      }
    }
    cur = 1 - cur;
  }
  for (size_t k = 0; k < s.long_rows.size(); ++k)
    for (int64_t j = 0; j < w; ++j) {
      const int64_t at = s.long_rows[k] * w + j;
      dst[at] = dst[at] + alpha * buf[cur][s.long_base[k] * w + j];
    }
}

TEST(GpuIndexSchedule, KernelsFollowTheCanonicalOrder) {
  // Every source count 1..70, long rows of 33 and 1100 chunks (two rounds),
  // and 32 * 32 + 5 chunks (three rounds), interleaved.
  std::vector<int64_t> idx;
  for (int64_t r = 0; r < 71; ++r)
    for (int64_t k = 0; k < r; ++k) idx.push_back(r);
  idx.insert(idx.end(), 33 * 32 - 5, 71);
  idx.insert(idx.end(), 1100 * 32 + 7, 72);
  idx.insert(idx.end(), (32 * 32 + 5) * 32 - 1, 74);
  std::mt19937 rng(17);
  std::shuffle(idx.begin(), idx.end(), rng);
  const int64_t rows = 76, w = 3, count = static_cast<int64_t>(idx.size());
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> src(count * w), dst(rows * w);
  for (auto& v : src) v = dist(rng) * (rng() % 7 == 0 ? 3e5f : 1.0f);
  for (auto& v : dst) v = dist(rng);
  const Selection sel = select(idx);
  const IndexAddSchedule s = schedule_of(sel);
  ASSERT_EQ(s.long_rows.size(), 41u);  // rows 33..72 and 74
  ASSERT_EQ(s.long_rows.back(), 74);
  ASSERT_EQ(s.group_offsets.size(), 4u);  // three rounds
  const float alpha = -0.75f;
  std::vector<float> got = dst;
  run_schedule(s, sel.sources, src, got, w, alpha);
  std::vector<float> want = dst;
  for (size_t k = 0; k < sel.rows.size(); ++k)
    for (int64_t j = 0; j < w; ++j) {
      std::vector<float> terms;
      for (int64_t e = sel.ptr[k]; e < sel.ptr[k + 1]; ++e)
        terms.push_back(src[sel.sources[e] * w + j]);
      const int64_t at = sel.rows[k] * w + j;
      want[at] = dst[at] + alpha * segsum(terms);
    }
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << "row " << i / w << " column " << i % w;
}

}  // namespace
}  // namespace xhal::gpu
