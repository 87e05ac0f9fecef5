// xhal-scale-check: ops on tensors of more than 2^31 elements, on a device
// and on the cpu device in one process, compared byte for byte
// (docs/performance.md, "Scale"). Every element offset past 2^31 must be
// computed in 64 bits for the bytes to match.
//
//   xhal-scale-check --device cuda:0 [--rows R] [--width W] [--count N]
//
// Steps (each a line "step: PASS|FAIL ..."; exit status 1 on any FAIL):
//   index_select  out[N, W] = src[idx, :], src [R, W]; indices include the
//                 last rows, so source offsets pass 2^31.
//   index_add     dst[R, W] (a copy of src) += 0.5 * out[i, :] at random rows
//                 and 16 hub rows (sums of thousands of terms).
//   spmm          Y[R, W] = A X, X = src: a few entries per row plus rows of
//                 5,000 entries (several of spmm's 1,024-entry pieces).
// The defaults (R = 2^21 + 17, W = 1024, N = 2^21 + 5) make every tensor
// above 8 GiB; the cpu device holds the same, so the host needs about 40 GiB.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace {

// splitmix64: the same inputs on every machine.
uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
float value_at(uint64_t i) { return static_cast<float>(mix(i) >> 40) * 0x1p-23f - 1.0f; }

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// One tensor's buffer on both devices.
struct Pair {
  xhal::Buffer dev, ref;
};

Pair allocate(const xhal::Device& d, const xhal::Device& r, uint64_t bytes) {
  return {xhal::Buffer::allocate(d, bytes), xhal::Buffer::allocate(r, bytes)};
}

// Reads both buffers in slices and counts the 4-byte elements that differ.
bool compare(const char* step, const Pair& p, uint64_t elements,
             std::chrono::steady_clock::time_point t0) {
  constexpr uint64_t kSlice = uint64_t{1} << 26;  // elements per read
  std::vector<uint32_t> a(kSlice), b(kSlice);
  uint64_t differ = 0, first = 0;
  for (uint64_t at = 0; at < elements; at += kSlice) {
    const uint64_t n = std::min(kSlice, elements - at);
    p.dev.read(a.data(), n * 4, at * 4);
    p.ref.read(b.data(), n * 4, at * 4);
    for (uint64_t i = 0; i < n; ++i)
      if (a[i] != b[i] && differ++ == 0) first = at + i;
  }
  if (differ)
    std::printf(
        "%s: FAIL %llu of %llu elements differ from the cpu device, first at %llu (%.1f s)\n", step,
        static_cast<unsigned long long>(differ), static_cast<unsigned long long>(elements),
        static_cast<unsigned long long>(first), seconds_since(t0));
  else
    std::printf("%s: PASS %llu elements bit-identical to the cpu device (%.1f s)\n", step,
                static_cast<unsigned long long>(elements), seconds_since(t0));
  std::fflush(stdout);
  return differ == 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "xhal-scale-check: ops on tensors of more than 2^31 elements against the cpu device"};
  std::string device = "cuda:0";
  int64_t rows = (int64_t{1} << 21) + 17, width = 1024, count = (int64_t{1} << 21) + 5;
  app.add_option("--device", device, "the device to check (a selector)");
  app.add_option("--rows", rows, "rows of the source table")
      ->check(CLI::Range(int64_t{2}, int64_t{1} << 40));
  app.add_option("--width", width, "row width")->check(CLI::Range(int64_t{1}, int64_t{1} << 20));
  app.add_option("--count", count, "indices")->check(CLI::Range(int64_t{1}, int64_t{1} << 40));
  CLI11_PARSE(app, argc, argv);
  try {
    const xhal::Device dev = xhal::Device::open(device), ref = xhal::Device::open("cpu");
    const auto t0 = std::chrono::steady_clock::now();
    const uint64_t src_elems = static_cast<uint64_t>(rows) * width;
    const uint64_t out_elems = static_cast<uint64_t>(count) * width;
    std::printf("device %s; src [%lld, %lld] (%llu elements), out [%lld, %lld] (%llu elements)\n",
                device.c_str(), static_cast<long long>(rows), static_cast<long long>(width),
                static_cast<unsigned long long>(src_elems), static_cast<long long>(count),
                static_cast<long long>(width), static_cast<unsigned long long>(out_elems));
    Pair src = allocate(dev, ref, src_elems * 4);
    {
      constexpr uint64_t kSlice = uint64_t{1} << 26;
      std::vector<float> host(kSlice);
      for (uint64_t at = 0; at < src_elems; at += kSlice) {
        const uint64_t n = std::min(kSlice, src_elems - at);
        for (uint64_t i = 0; i < n; ++i) host[i] = value_at(at + i);
        src.dev.write(host.data(), n * 4, at * 4);
        src.ref.write(host.data(), n * 4, at * 4);
      }
    }
    std::printf("inputs written (%.1f s)\n", seconds_since(t0));
    bool ok = true;

    // index_select: random rows, the last 64 rows at the end.
    std::vector<int64_t> idx(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      idx[i] = i >= count - 64 ? rows - 1 - (count - 1 - i) % rows
                               : static_cast<int64_t>(mix(uint64_t(i) + 7) % uint64_t(rows));
    Pair out = allocate(dev, ref, out_elems * 4);
    {
      const auto pd = xhal::IndexPlan::create(dev, idx, static_cast<uint64_t>(rows));
      const auto pr = xhal::IndexPlan::create(ref, idx, static_cast<uint64_t>(rows));
      xhal::index_select(dev, pd, xhal::tensor<float>(src.dev, {rows, width}),
                         xhal::tensor<float>(out.dev, {count, width}));
      xhal::index_select(ref, pr, xhal::tensor<float>(src.ref, {rows, width}),
                         xhal::tensor<float>(out.ref, {count, width}));
      dev.synchronize();
      ref.synchronize();
    }
    ok = compare("index_select", out, out_elems, t0) && ok;

    // index_add into a copy of src: random rows, one in ten to 16 hubs,
    // the last rows included.
    Pair dst = allocate(dev, ref, src_elems * 4);
    src.dev.copy_to(dst.dev, src_elems * 4);
    src.ref.copy_to(dst.ref, src_elems * 4);
    for (int64_t i = 0; i < count; ++i) {
      const uint64_t h = mix(uint64_t(i) + 99);
      idx[i] = i >= count - 64 ? rows - 1 - (count - 1 - i) % rows
               : h % 10 == 0   ? static_cast<int64_t>((h >> 8) % 16) * (rows / 16)
                               : static_cast<int64_t>((h >> 8) % uint64_t(rows));
    }
    {
      const auto pd = xhal::IndexPlan::create(dev, idx, static_cast<uint64_t>(rows));
      const auto pr = xhal::IndexPlan::create(ref, idx, static_cast<uint64_t>(rows));
      xhal::index_add(dev, pd, 0.5f, xhal::tensor<float>(out.dev, {count, width}),
                      xhal::tensor<float>(dst.dev, {rows, width}));
      xhal::index_add(ref, pr, 0.5f, xhal::tensor<float>(out.ref, {count, width}),
                      xhal::tensor<float>(dst.ref, {rows, width}));
      dev.synchronize();
      ref.synchronize();
    }
    ok = compare("index_add", dst, src_elems, t0) && ok;
    idx = {};
    out = {};

    // spmm: Y = A X with X = src [rows, width] (Y written into dst).
    {
      std::vector<int64_t> rp{0}, ci;
      std::vector<float> v;
      for (int64_t i = 0; i < rows; ++i) {
        std::vector<int64_t> cols{i, static_cast<int64_t>(mix(uint64_t(i)) % uint64_t(rows))};
        if (i % 65536 == 1)  // a long row: 5,000 entries
          for (int64_t t = 0; t < 5000; ++t) cols.push_back((i + 1 + t * 37) % rows);
        std::sort(cols.begin(), cols.end());
        cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
        for (int64_t c : cols) {
          ci.push_back(c);
          v.push_back(value_at(uint64_t(ci.size()) + (uint64_t{1} << 50)));
        }
        rp.push_back(static_cast<int64_t>(ci.size()));
      }
      const auto ad = xhal::Csr::create(dev, rows, rows, rp, ci, v);
      const auto ar = xhal::Csr::create(ref, rows, rows, rp, ci, v);
      std::printf("matrices created, %zu entries (%.1f s)\n", ci.size(), seconds_since(t0));
      xhal::spmm(dev, ad, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(src.dev, {rows, width}),
                 0.0f, xhal::tensor<float>(dst.dev, {rows, width}));
      xhal::spmm(ref, ar, XHAL_TRANSPOSE_NONE, 1.0f, xhal::tensor<float>(src.ref, {rows, width}),
                 0.0f, xhal::tensor<float>(dst.ref, {rows, width}));
      dev.synchronize();
      ref.synchronize();
      ok = compare("spmm", dst, src_elems, t0) && ok;
    }
    std::printf("%s (%.1f s)\n", ok ? "all steps PASS" : "FAILED", seconds_since(t0));
    return ok ? 0 : 1;
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "xhal-scale-check: %s\n", e.what());
    return 2;
  }
}
