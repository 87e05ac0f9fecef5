// CSR helpers: a pattern is int64 row_ptr / col arrays, its values f32 read
// directly or, for A^T, through t_perm into A's values.
int64_t csr_at(uint64_t arr, uint64_t i) { return ldi64(arr, i); }
float csr_value(uint64_t values, uint64_t perm, uint64_t e) {
  return ldf(values, perm != 0ul ? uint64_t(ldi64(perm, e)) : e);
}
