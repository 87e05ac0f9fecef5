// Device options of the GPU plugins (docs/device-options.md): defaults,
// accepted values, refused names and values with their messages, and the
// round trip through the text device_get_options writes.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "device_options.h"

namespace {

using xhal::gpu::DeviceOptions;
using xhal::gpu::GpuBackend;
using xhal::gpu::SolvePoll;
using xhal::gpu::SolveSchedule;
using xhal::gpu::SpmvShortRows;

constexpr GpuBackend kCuda = GpuBackend::kCuda;
constexpr GpuBackend kRocm = GpuBackend::kRocm;

void expect_same(const DeviceOptions& a, const DeviceOptions& b) {
  EXPECT_EQ(a.solve_schedule, b.solve_schedule);
  EXPECT_EQ(a.solve_block_threads, b.solve_block_threads);
  EXPECT_EQ(a.solve_blocks_per_sm, b.solve_blocks_per_sm);
  EXPECT_EQ(a.solve_poll, b.solve_poll);
  EXPECT_EQ(a.solve_poll_terms, b.solve_poll_terms);
  EXPECT_EQ(a.solve_sleep_ns, b.solve_sleep_ns);
  EXPECT_EQ(a.norm_backward_fused_from_rows, b.norm_backward_fused_from_rows);
  EXPECT_EQ(a.rows_resident, b.rows_resident);
  EXPECT_EQ(a.sparse_index64, b.sparse_index64);
  EXPECT_EQ(a.spmv_fused_combine, b.spmv_fused_combine);
  EXPECT_EQ(a.spmv_short_rows, b.spmv_short_rows);
  EXPECT_EQ(a.trace, b.trace);
}

DeviceOptions parse_ok(const std::string& text, GpuBackend backend = kCuda) {
  DeviceOptions o;
  std::string error;
  EXPECT_TRUE(xhal::gpu::parse_device_options(text.c_str(), backend, &o, &error))
      << "'" << text << "': " << error;
  EXPECT_EQ(error, "");
  return o;
}

// A refused text: returns the message and checks that the output was left
// alone (a sentinel that no parse would produce).
std::string parse_refused(const std::string& text, GpuBackend backend = kCuda) {
  DeviceOptions o;
  o.solve_block_threads = -7;
  o.norm_backward_fused_from_rows = -7;
  std::string error;
  EXPECT_FALSE(xhal::gpu::parse_device_options(text.c_str(), backend, &o, &error))
      << "'" << text << "' was accepted";
  EXPECT_EQ(o.solve_block_threads, -7) << text;
  EXPECT_EQ(o.norm_backward_fused_from_rows, -7) << text;
  return error;
}

const char* const kCudaKnown =
    "known options: solve.schedule, solve.block_threads, solve.blocks_per_sm, solve.poll, "
    "solve.poll_terms, solve.sleep_ns, norm_backward.fused_from_rows, rows.resident, sparse_index, "
    "spmv.combine, spmv.short_rows, trace";
const char* const kRocmKnown =
    "known options: solve.schedule, norm_backward.fused_from_rows, sparse_index, spmv.combine, "
    "spmv.short_rows, trace";

TEST(GpuOptions, DefaultsAreTheKernelsDefaults) {
  const DeviceOptions c = xhal::gpu::default_device_options(kCuda);
  EXPECT_EQ(c.solve_schedule, SolveSchedule::kSyncFree);
  EXPECT_EQ(c.solve_block_threads, 128);
  EXPECT_EQ(c.solve_blocks_per_sm, 0);  // auto
  EXPECT_EQ(c.solve_poll, SolvePoll::kAuto);
  EXPECT_EQ(c.solve_poll_terms, 0);  // auto
  EXPECT_EQ(c.solve_sleep_ns, 0u);
  EXPECT_EQ(c.norm_backward_fused_from_rows, 4096);  // 128 colsum blocks of 32 rows
  EXPECT_FALSE(c.sparse_index64);                    // auto
  EXPECT_TRUE(c.spmv_fused_combine);
  EXPECT_FALSE(c.trace);
  const DeviceOptions r = xhal::gpu::default_device_options(kRocm);
  EXPECT_EQ(r.solve_schedule, SolveSchedule::kLevels);
  EXPECT_EQ(r.norm_backward_fused_from_rows, 4096);
  EXPECT_FALSE(r.trace);
  expect_same(parse_ok(""), c);
  expect_same(parse_ok("", kRocm), r);
}

TEST(GpuOptions, NullTextIsNoOptions) {
  DeviceOptions o;
  o.trace = true;
  std::string error;
  ASSERT_TRUE(xhal::gpu::parse_device_options(nullptr, kCuda, &o, &error));
  expect_same(o, xhal::gpu::default_device_options(kCuda));
}

TEST(GpuOptions, DefaultsAsText) {
  EXPECT_EQ(
      xhal::gpu::format_device_options(xhal::gpu::default_device_options(kCuda), kCuda),
      "solve.schedule=syncfree,solve.block_threads=128,solve.blocks_per_sm=auto,"
      "solve.poll=auto,solve.poll_terms=auto,solve.sleep_ns=0,"
      "norm_backward.fused_from_rows=4096,rows.resident=1,sparse_index=auto,spmv.combine=fused,"
      "spmv.short_rows=auto,trace=0");
  EXPECT_EQ(xhal::gpu::format_device_options(xhal::gpu::default_device_options(kRocm), kRocm),
            "solve.schedule=levels,norm_backward.fused_from_rows=4096,sparse_index=auto,"
            "spmv.combine=fused,spmv.short_rows=auto,trace=0");
}

TEST(GpuOptions, EveryOptionAndValue) {
  EXPECT_EQ(parse_ok("solve.schedule=levels").solve_schedule, SolveSchedule::kLevels);
  EXPECT_EQ(parse_ok("solve.schedule=syncfree").solve_schedule, SolveSchedule::kSyncFree);
  EXPECT_EQ(parse_ok("solve.schedule=levels", kRocm).solve_schedule, SolveSchedule::kLevels);
  for (int t : {32, 64, 96, 128, 160, 192, 224, 256})
    EXPECT_EQ(parse_ok("solve.block_threads=" + std::to_string(t)).solve_block_threads, t);
  EXPECT_EQ(parse_ok("solve.blocks_per_sm=auto").solve_blocks_per_sm, 0);
  EXPECT_EQ(parse_ok("solve.blocks_per_sm=1").solve_blocks_per_sm, 1);
  EXPECT_EQ(parse_ok("solve.blocks_per_sm=32").solve_blocks_per_sm, 32);
  EXPECT_EQ(parse_ok("solve.poll=auto").solve_poll, SolvePoll::kAuto);
  EXPECT_EQ(parse_ok("solve.poll=converged").solve_poll, SolvePoll::kConverged);
  EXPECT_EQ(parse_ok("solve.poll=lanes").solve_poll, SolvePoll::kLanes);
  EXPECT_EQ(parse_ok("solve.poll_terms=auto").solve_poll_terms, 0);
  EXPECT_EQ(parse_ok("solve.poll_terms=16").solve_poll_terms, 16);
  EXPECT_EQ(parse_ok("solve.poll_terms=32").solve_poll_terms, 32);
  EXPECT_EQ(parse_ok("solve.sleep_ns=0").solve_sleep_ns, 0u);
  EXPECT_EQ(parse_ok("solve.sleep_ns=1000").solve_sleep_ns, 1000u);
  EXPECT_EQ(parse_ok("solve.sleep_ns=1000000").solve_sleep_ns, 1000000u);
  EXPECT_EQ(parse_ok("norm_backward.fused_from_rows=0").norm_backward_fused_from_rows, 0);
  EXPECT_EQ(parse_ok("norm_backward.fused_from_rows=8192", kRocm).norm_backward_fused_from_rows,
            8192);
  EXPECT_EQ(parse_ok("norm_backward.fused_from_rows=1099511627776").norm_backward_fused_from_rows,
            int64_t{1} << 40);
  EXPECT_FALSE(parse_ok("rows.resident=0").rows_resident);
  EXPECT_TRUE(parse_ok("rows.resident=1").rows_resident);
  EXPECT_TRUE(parse_ok("sparse_index=64").sparse_index64);
  EXPECT_FALSE(parse_ok("sparse_index=auto").sparse_index64);
  EXPECT_TRUE(parse_ok("sparse_index=64", kRocm).sparse_index64);
  EXPECT_TRUE(parse_ok("spmv.combine=fused").spmv_fused_combine);
  EXPECT_FALSE(parse_ok("spmv.combine=launch").spmv_fused_combine);
  EXPECT_FALSE(parse_ok("spmv.combine=launch", kRocm).spmv_fused_combine);
  EXPECT_EQ(parse_ok("spmv.short_rows=auto").spmv_short_rows, SpmvShortRows::kAuto);
  EXPECT_EQ(parse_ok("spmv.short_rows=tiles").spmv_short_rows, SpmvShortRows::kTiles);
  EXPECT_EQ(parse_ok("spmv.short_rows=rows").spmv_short_rows, SpmvShortRows::kRows);
  EXPECT_EQ(parse_ok("spmv.short_rows=rows", kRocm).spmv_short_rows, SpmvShortRows::kRows);
  EXPECT_TRUE(parse_ok("trace=1").trace);
  EXPECT_FALSE(parse_ok("trace=0").trace);
  EXPECT_TRUE(parse_ok("trace=1", kRocm).trace);
}

TEST(GpuOptions, SeveralItemsEmptyItemsAndOverrides) {
  const DeviceOptions o =
      parse_ok(",solve.block_threads=64,,solve.poll=lanes,trace=1,solve.sleep_ns=500,");
  EXPECT_EQ(o.solve_block_threads, 64);
  EXPECT_EQ(o.solve_poll, SolvePoll::kLanes);
  EXPECT_TRUE(o.trace);
  EXPECT_EQ(o.solve_sleep_ns, 500u);
  EXPECT_EQ(o.solve_blocks_per_sm, 0);  // untouched: default
  EXPECT_EQ(o.norm_backward_fused_from_rows, 4096);
  // A later item wins (the core appends backend-prefixed items after plain ones).
  EXPECT_FALSE(parse_ok("trace=1,trace=0").trace);
  EXPECT_EQ(parse_ok("solve.poll_terms=16,solve.poll_terms=auto").solve_poll_terms, 0);
  // Each parse starts from the defaults, not from what *out held.
  DeviceOptions held;
  held.trace = true;
  held.solve_block_threads = 256;
  std::string error;
  ASSERT_TRUE(xhal::gpu::parse_device_options("solve.poll=converged", kCuda, &held, &error));
  EXPECT_FALSE(held.trace);
  EXPECT_EQ(held.solve_block_threads, 128);
}

TEST(GpuOptions, UnknownNamesAreRefusedWithTheKnownList) {
  std::string e = parse_refused("solve.pol=lanes");
  EXPECT_EQ(
      e, std::string("device option 'solve.pol=lanes': unknown name 'solve.pol'; ") + kCudaKnown);
  e = parse_refused("trace=1,XHAL_CUDA_TRACE=1");
  EXPECT_NE(e.find("'XHAL_CUDA_TRACE=1': unknown name 'XHAL_CUDA_TRACE'"), std::string::npos) << e;
  e = parse_refused("Trace=1");  // names are case-sensitive
  EXPECT_NE(e.find("unknown name 'Trace'"), std::string::npos) << e;
  e = parse_refused(" trace=1");  // no trimming: the space is part of the name
  EXPECT_NE(e.find("unknown name ' trace'"), std::string::npos) << e;
  e = parse_refused("cuda:trace=1");  // prefixes are the core's business
  EXPECT_NE(e.find("unknown name 'cuda:trace'"), std::string::npos) << e;
  e = parse_refused("bogus=1", kRocm);
  EXPECT_EQ(e, std::string("device option 'bogus=1': unknown name 'bogus'; ") + kRocmKnown);
}

TEST(GpuOptions, CudaOnlyOptionsAreRefusedOnRocm) {
  for (const char* item :
       {"solve.block_threads=128", "solve.blocks_per_sm=auto", "solve.poll=lanes",
        "solve.poll_terms=32", "solve.sleep_ns=0", "rows.resident=1"}) {
    const std::string e = parse_refused(item, kRocm);
    EXPECT_NE(e.find("does not apply to rocm"), std::string::npos) << e;
    EXPECT_NE(e.find(std::string("device option '") + item + "'"), std::string::npos) << e;
    EXPECT_NE(e.find(kRocmKnown), std::string::npos) << e;
  }
  const std::string e = parse_refused("solve.schedule=syncfree", kRocm);
  EXPECT_EQ(e, std::string("device option 'solve.schedule=syncfree': 'syncfree' is not "
                           "available on rocm (expects syncfree or levels (rocm: levels)); ") +
                   kRocmKnown);
}

TEST(GpuOptions, MalformedItemsAndValuesAreRefused) {
  EXPECT_EQ(parse_refused("trace"),
            std::string("device option 'trace': not name=value; ") + kCudaKnown);
  EXPECT_NE(parse_refused("=1").find("device option '=1': not name=value"), std::string::npos);
  EXPECT_EQ(parse_refused("solve.block_threads=abc"),
            std::string("device option 'solve.block_threads=abc': 'abc' is not a number "
                        "(expects a multiple of 32 in 32..256); ") +
                kCudaKnown);
  for (const char* item :
       {"solve.block_threads=", "solve.block_threads=-32", "solve.block_threads=+32",
        "solve.block_threads= 64", "solve.block_threads=64 ", "solve.block_threads=0x40",
        "solve.sleep_ns=1e3", "solve.sleep_ns=1.5", "solve.blocks_per_sm=",
        "norm_backward.fused_from_rows=4k", "norm_backward.fused_from_rows=-1"}) {
    const std::string e = parse_refused(item);
    EXPECT_NE(e.find("is not a number"), std::string::npos) << item << ": " << e;
    EXPECT_NE(e.find(kCudaKnown), std::string::npos) << e;
  }
  for (const char* item : {"trace=yes",
                           "trace=true",
                           "trace=false",
                           "trace=off",
                           "trace=",
                           "trace=2",
                           "solve.poll=fast",
                           "solve.poll=",
                           "solve.poll_terms=8",
                           "solve.poll_terms=64",
                           "solve.schedule=level",
                           "solve.schedule=",
                           "solve.schedule=LEVELS",
                           "rows.resident=2",
                           "rows.resident=on",
                           "rows.resident=",
                           "sparse_index=32",
                           "sparse_index=",
                           "sparse_index=AUTO",
                           "spmv.combine=",
                           "spmv.combine=1",
                           "spmv.combine=Fused",
                           "spmv.short_rows=",
                           "spmv.short_rows=warp",
                           "spmv.short_rows=Rows"}) {
    const std::string e = parse_refused(item);
    EXPECT_NE(e.find("is not a valid value (expects"), std::string::npos) << item << ": " << e;
    EXPECT_NE(e.find(kCudaKnown), std::string::npos) << e;
  }
  // The bad item is named even after good ones, and nothing of them is kept.
  const std::string e = parse_refused("trace=1,solve.block_threads=64,solve.poll=fast");
  EXPECT_NE(e.find("device option 'solve.poll=fast'"), std::string::npos) << e;
}

TEST(GpuOptions, OutOfRangeValuesAreRefused) {
  for (const char* item :
       {"solve.block_threads=0", "solve.block_threads=16", "solve.block_threads=31",
        "solve.block_threads=48", "solve.block_threads=100", "solve.block_threads=255",
        "solve.block_threads=288", "solve.block_threads=99999999999999999999999",
        "solve.blocks_per_sm=0", "solve.blocks_per_sm=33", "solve.sleep_ns=1000001",
        "solve.sleep_ns=18446744073709551616", "norm_backward.fused_from_rows=1099511627777",
        "norm_backward.fused_from_rows=18446744073709551615"}) {
    const std::string e = parse_refused(item);
    EXPECT_NE(e.find("is out of range (expects"), std::string::npos) << item << ": " << e;
    EXPECT_NE(e.find(std::string("device option '") + item + "'"), std::string::npos) << e;
    EXPECT_NE(e.find(kCudaKnown), std::string::npos) << e;
  }
  EXPECT_EQ(parse_refused("solve.blocks_per_sm=33"),
            std::string("device option 'solve.blocks_per_sm=33': '33' is out of range "
                        "(expects auto or 1..32); ") +
                kCudaKnown);
}

TEST(GpuOptions, RoundTripThroughTheOptionsText) {
  const std::vector<std::string> texts = {
      "",
      "trace=1",
      "solve.schedule=levels,solve.block_threads=256,solve.blocks_per_sm=32,solve.poll=lanes,"
      "solve.poll_terms=16,solve.sleep_ns=1000000,norm_backward.fused_from_rows=0,rows.resident=0,"
      "sparse_index=64,spmv.combine=launch,spmv.short_rows=rows,trace=1",
      "spmv.short_rows=tiles,solve.blocks_per_sm=3,solve.poll=converged,solve.poll_terms=32,"
      "norm_backward.fused_from_rows=1099511627776",
  };
  for (const std::string& t : texts) {
    const DeviceOptions o = parse_ok(t);
    const std::string text = xhal::gpu::format_device_options(o, kCuda);
    const DeviceOptions back = parse_ok(text);
    expect_same(back, o);
    EXPECT_EQ(xhal::gpu::format_device_options(back, kCuda), text);
  }
  const DeviceOptions all = parse_ok(texts[2]);
  EXPECT_EQ(xhal::gpu::format_device_options(all, kCuda), texts[2]);
  // ROCm prints only its options, and reads them back.
  const DeviceOptions r = parse_ok("norm_backward.fused_from_rows=0,trace=1", kRocm);
  const std::string rtext = xhal::gpu::format_device_options(r, kRocm);
  EXPECT_EQ(rtext,
            "solve.schedule=levels,norm_backward.fused_from_rows=0,sparse_index=auto,"
            "spmv.combine=fused,spmv.short_rows=auto,trace=1");
  expect_same(parse_ok(rtext, kRocm), r);
}

TEST(GpuOptions, CopyTextTruncatesAndTerminates) {
  char buf[8];
  std::fill(std::begin(buf), std::end(buf), 'x');
  xhal::gpu::copy_option_text("trace=1", buf, 0);
  EXPECT_EQ(buf[0], 'x');  // capacity 0: nothing written
  xhal::gpu::copy_option_text("trace=1", buf, 1);
  EXPECT_STREQ(buf, "");
  xhal::gpu::copy_option_text("trace=1", buf, 4);
  EXPECT_STREQ(buf, "tra");
  EXPECT_EQ(buf[4], 'x');
  xhal::gpu::copy_option_text("trace=1", buf, sizeof buf);
  EXPECT_STREQ(buf, "trace=1");
  xhal::gpu::copy_option_text("trace=1", nullptr, 8);  // no crash
}

}  // namespace
