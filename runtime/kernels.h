/* Compute kernels that generated code calls for whole loop nests: the
   matrix product behind contractions (reduce.sum of a product). Plain C so
   that generated code and embedders can call them. */
#ifndef DELTA_RUNTIME_KERNELS_H_
#define DELTA_RUNTIME_KERNELS_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flags of delta_gemm_*. */
enum {
  /* Fused multiply-add (one rounding per term), and the terms may be
     summed in another order (dot products in vector lanes): faster, and
     no longer bitwise equal to summing the rounded products in order. */
  DELTA_GEMM_FMA = 1,
  /* Run on one thread (the caller is already parallel). */
  DELTA_GEMM_SERIAL = 2,
};

/* c[i*c_m + j*c_n] = sum over p in [0, k), in increasing order, of
   a[i*a_m + p*a_k] * b[p*b_k + j*b_n], for i < m, j < n. Strides are in
   elements and may be anything (0 included); c must not overlap a or b.
   Without DELTA_GEMM_FMA every element is the same sum, term by term, as
   the naive loop (each product rounded, added in order of p), so results
   are bitwise those of the interpreter. See docs/performance.md. */
void delta_gemm_f32(int64_t m, int64_t n, int64_t k, const float* a,
                    int64_t a_m, int64_t a_k, const float* b, int64_t b_k,
                    int64_t b_n, float* c, int64_t c_m, int64_t c_n,
                    int32_t flags);
void delta_gemm_f64(int64_t m, int64_t n, int64_t k, const double* a,
                    int64_t a_m, int64_t a_k, const double* b, int64_t b_k,
                    int64_t b_n, double* c, int64_t c_m, int64_t c_n,
                    int32_t flags);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_KERNELS_H_ */
