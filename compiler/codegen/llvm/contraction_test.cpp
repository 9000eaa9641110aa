// The matrix-product kernel that contractions compile to: bitwise equal to
// the naive loop (exact mode) on sizes 0, 1, odd sizes, sizes that are not
// multiples of the tiles, transposed strides, on one thread and on the pool
// (n = 1030 is split by columns, Note [Column split] in runtime/kernels.cpp;
// smaller n by rows).
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "runtime/kernels.h"

namespace {

template <typename T>
using Gemm = void (*)(int64_t, int64_t, int64_t, const T*, int64_t, int64_t,
                      const T*, int64_t, int64_t, T*, int64_t, int64_t,
                      int32_t);

// a is m x k (row-major, or column-major if `transposed`; with `spread`,
// every spread-th element, so that neither stride is 1), b is k x n
// (row-major, or column-major if `b_transposed`), c is written
// column-major (row-major with `c_rows`): every stride pattern the code
// generator passes.
template <typename T>
void Check(Gemm<T> gemm, int64_t m, int64_t n, int64_t k, bool transposed,
           int32_t flags, bool b_transposed = false, int64_t spread = 1,
           bool c_rows = false) {
  CAPTURE(m);
  CAPTURE(n);
  CAPTURE(k);
  CAPTURE(transposed);
  CAPTURE(b_transposed);
  std::vector<T> a(m * k * spread + 1), b(k * n + 1), c(m * n + 1, T(7)),
      want(m * n + 1, T(7));
  unsigned seed = static_cast<unsigned>(m * 131 + n * 17 + k);
  for (T& x : a) x = T((rand_r(&seed) % 2001) - 1000) / T(997);
  for (T& x : b) x = T((rand_r(&seed) % 2001) - 1000) / T(991);
  int64_t a_m = (transposed ? 1 : k) * spread;
  int64_t a_k = (transposed ? m : 1) * spread;
  int64_t b_k = b_transposed ? 1 : n, b_n = b_transposed ? k : 1;
  int64_t c_m = c_rows ? n : 1, c_n = c_rows ? 1 : m;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      T sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        T product = a[i * a_m + p * a_k] * b[p * b_k + j * b_n];
        sum = sum + product;
      }
      want[i * c_m + j * c_n] = sum;
    }
  gemm(m, n, k, a.data(), a_m, a_k, b.data(), b_k, b_n, c.data(), c_m, c_n,
       flags);
  if (flags & DELTA_GEMM_FMA) {
    for (int64_t e = 0; e < m * n; ++e)
      CHECK(c[e] == doctest::Approx(want[e]).epsilon(1e-4));
  } else {
    CHECK(std::memcmp(c.data(), want.data(), sizeof(T) * (m * n + 1)) == 0);
  }
}

}  // namespace

TEST_CASE("the gemm kernel equals the naive loop bit for bit") {
  for (int32_t flags : {0, static_cast<int>(DELTA_GEMM_SERIAL)})
    for (int64_t m : {0, 1, 5, 7, 13, 200})
      for (int64_t n : {0, 1, 3, 33, 1030})
        for (int64_t k : {0, 1, 9, 257}) {
          Check<float>(delta_gemm_f32, m, n, k, (m + n) % 2 == 1, flags);
          Check<double>(delta_gemm_f64, m, n, k, (m + k) % 2 == 0, flags);
          // B contiguous in k: packed column after column.
          Check<float>(delta_gemm_f32, m, n, k, false, flags, true);
          // A strided both ways: packed (Note [A in place] reads the
          // others where they lie).
          Check<float>(delta_gemm_f32, m, n, k, m % 2 == 0, flags, false, 3);
        }
}

// Few rows, many columns, C row-major (the LSTM's per-step products): B
// packed depth by depth (Note [B packing order]), or read in place up to 24
// rows, and short last panels of A (Note [Short panels]).
TEST_CASE("products with few rows and C row-major, bit for bit") {
  for (int32_t flags : {0, static_cast<int>(DELTA_GEMM_SERIAL)})
    for (int64_t m : {2, 25, 32})
      for (int64_t k : {7, 256, 600})
        for (bool b_transposed : {false, true}) {
          Check<float>(delta_gemm_f32, m, 1024, k, false, flags, b_transposed,
                       1, true);
          Check<double>(delta_gemm_f64, m, 300, k, true, flags, b_transposed, 1,
                        true);
        }
}

TEST_CASE("the gemm kernel with FMA stays close to the naive loop") {
  Check<float>(delta_gemm_f32, 97, 131, 300, false, DELTA_GEMM_FMA);
  Check<double>(delta_gemm_f64, 97, 131, 300, true, DELTA_GEMM_FMA);
}

// Note [Dot products] in runtime/kernels.cpp: few rows and columns, both
// operands contiguous in k, FMA allowed; edges of the 4 x 4 (or 3 x 3)
// tiles and depths that are not a multiple of the vector width.
TEST_CASE("few rows and columns contiguous in k run as dot products") {
  for (int64_t m : {1, 3, 5, 20, 32})
    for (int64_t n : {1, 4, 7, 32})
      for (int64_t k : {1, 7, 8, 100, 1001}) {
        Check<float>(delta_gemm_f32, m, n, k, false, DELTA_GEMM_FMA, true);
        Check<double>(delta_gemm_f64, m, n, k, false, DELTA_GEMM_FMA, true);
      }
  // Exact mode keeps the kernel's order: bitwise the naive loop.
  Check<double>(delta_gemm_f64, 20, 20, 1000, false, 0, true);
}
