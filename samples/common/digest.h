// The digest every sample prints as its last line: FNV-1a 64 over the raw
// bytes of its final outputs, in a fixed order. Conforming devices give
// bit-identical outputs, so they print the same digest (samples/README.md).
#ifndef XHAL_SAMPLES_DIGEST_H
#define XHAL_SAMPLES_DIGEST_H

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <vector>

struct Digest {
  uint64_t h = 0xcbf29ce484222325ull;
  template <typename T>
  void add(const std::vector<T>& v) {
    const auto* b = reinterpret_cast<const unsigned char*>(v.data());
    for (size_t i = 0; i < v.size() * sizeof(T); ++i) h = (h ^ b[i]) * 0x100000001b3ull;
  }
  void print() const { std::printf("digest %016" PRIx64 "\n", h); }
};

#endif
