// CSR helpers: a pattern is row_ptr / col arrays (with the lists and
// schedules csr_create built), int32 in the IDX32 variants (every value of
// the matrix's upload fits) and int64 otherwise; its values f32 read
// directly or, for A^T, through t_perm into A's values (f16/bf16 values
// in a STORAGE_F16 / STORAGE_BF16 shader, f64 in an F64 one: those
// include narrow.glsl first, whose lde reads the storage type).
#ifdef IDX32
int64_t csr_at(uint64_t arr, uint64_t i) { return int64_t(I32Ref(arr + i * 4ul).v); }
#else
int64_t csr_at(uint64_t arr, uint64_t i) { return ldi64(arr, i); }
#endif
REAL csr_value(uint64_t values, uint64_t perm, uint64_t e) {
  uint64_t i = perm != 0ul ? uint64_t(csr_at(perm, e)) : e;
#if defined(STORAGE_F16) || defined(STORAGE_BF16) || defined(F64)
  return lde(values, i);
#else
  return ldf(values, i);
#endif
}
