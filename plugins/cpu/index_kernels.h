// index_add's inner loops (docs/semantics.md 3.7 and section 4) as one
// source templated on the element type: the segsum of one destination
// row's sources over a tile of columns (chunks of 32 summed from +0 in
// source order, chunk sums joined by the pairwise tree, kept as a stack of
// column tiles), and dst + alpha * T. The plugin runs f64 through these;
// f32 runs the per-ISA loops of isa_moves.cpp (same order, checked bit for
// bit against the float instantiation in tests/cpu_kernels). alpha is the
// call's float, widened exactly.
#pragma once

#include <cstdint>
#include <cstring>

#include "isa_kernels.h"

namespace xhal::cpu::rows {

template <class T>
class ColumnTree {
 public:
  explicit ColumnTree(T* storage) : slot_(storage) {}
  T* next_slot() { return slot_ + top_ * kIndexTile; }
  void push_filled(int64_t width) {
    height_[top_++] = 0;
    collapse(width);
  }
  // Root of what was pushed, padded with +0 up to at least `height`.
  const T* finish(int64_t width, int height) {
    while (top_ > 1) {
      pad_top(width);
      collapse(width);
    }
    while (height_[0] < height) pad_top(width);
    return slot_;
  }

 private:
  void pad_top(int64_t width) {
    T* v = slot_ + (top_ - 1) * kIndexTile;
    for (int64_t j = 0; j < width; ++j) v[j] = v[j] + T(0);
    ++height_[top_ - 1];
  }
  void collapse(int64_t width) {
    while (top_ >= 2 && height_[top_ - 1] == height_[top_ - 2]) {
      T* left = slot_ + (top_ - 2) * kIndexTile;
      const T* right = slot_ + (top_ - 1) * kIndexTile;
      for (int64_t j = 0; j < width; ++j) left[j] = left[j] + right[j];
      ++height_[top_ - 2];
      --top_;
    }
  }
  T* slot_;
  int height_[kIndexTreeDepth];
  int top_ = 0;
};

// The segsum subtree of chunks [c0, c1) of a row's m sources over columns
// [j0, j0 + width), padded to `height`; stack: kIndexTreeDepth * kIndexTile.
template <class T>
void segsum_chunks(const T* src, int64_t w, const int64_t* sources, int64_t m, int64_t c0,
                   int64_t c1, int height, int64_t j0, int64_t width, T* stack, T* out) {
  ColumnTree<T> tree(stack);
  for (int64_t c = c0; c < c1; ++c) {
    T* acc = tree.next_slot();
    for (int64_t j = 0; j < width; ++j) acc[j] = T(0);
    const int64_t end = (c + 1) * 32 < m ? (c + 1) * 32 : m;
    for (int64_t k = c * 32; k < end; ++k) {
      const T* row = src + sources[k] * w + j0;
      for (int64_t j = 0; j < width; ++j) acc[j] = acc[j] + row[j];
    }
    tree.push_filled(width);
  }
  const T* root = tree.finish(width, height);
  std::memcpy(out, root, static_cast<size_t>(width) * sizeof(T));
}

// A destination row with 1..32 sources: the sum from +0 in source order,
// then dst + alpha * sum.
template <class T>
void add_small_row(T* dst, const T* src, int64_t w, const int64_t* sources, int64_t m,
                   float alpha) {
  const T a = static_cast<T>(alpha);
  for (int64_t j = 0; j < w; ++j) {
    T acc = T(0) + src[sources[0] * w + j];
    for (int64_t k = 1; k < m; ++k) acc = acc + src[sources[k] * w + j];
    dst[j] = dst[j] + a * acc;
  }
}

template <class T>
void axpy(T* dst, const T* t, float alpha, int64_t width) {
  const T a = static_cast<T>(alpha);
  for (int64_t j = 0; j < width; ++j) dst[j] = dst[j] + a * t[j];
}

}  // namespace xhal::cpu::rows
