/* Calls results_in_place.dl's entries with result buffers the library may
   make their arrays in, and with buffers it must not (an input's, one
   that another entry's array took): every value is checked against C. */
#include "results_in_place.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static int check(const char* what, const float* got, const float* want,
                 int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    if (fabsf(got[i] - want[i]) > 1e-4f * (1.0f + fabsf(want[i]))) {
      printf("%s: element %lld is %g, expected %g\n", what, (long long)i,
             got[i], want[i]);
      return 1;
    }
  printf("%s: ok\n", what);
  return 0;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0); /* in order with the trace on stderr */
  results_in_place_context* ctx = results_in_place_context_create(NULL);
  enum { N = 5, I = 37, J = 29, K = 41 };
  float x[N], y[N], z[N], want[N], want2[N];
  int failed = 0;
  for (int i = 0; i < N; ++i) x[i] = (float)(i + 1);

  for (int i = 0; i < N; ++i) want[i] = 3.0f * x[i];
  failed |= results_in_place_scaled(ctx, x, N, 3.0f, y, N) != 0;
  failed |= check("scaled", y, want, N);

  /* The result aliases the input: it is computed first, then copied. */
  for (int i = 0; i < N; ++i) z[i] = x[i];
  failed |= results_in_place_scaled(ctx, z, N, 3.0f, z, N) != 0;
  failed |= check("scaled in place", z, want, N);

  /* `scaled` makes its array in result 0's buffer; `swapped` returns it
     as result 1. */
  for (int i = 0; i < N; ++i) {
    want[i] = x[i] + 1.0f;
    want2[i] = 2.0f * x[i];
  }
  failed |= results_in_place_swapped(ctx, x, N, y, N, z, N) != 0;
  failed |= check("swapped 0", y, want, N);
  failed |= check("swapped 1", z, want2, N);

  /* `scaled`'s array is made in the result's buffer and dropped. */
  float total = 0;
  for (int i = 0; i < N; ++i) total += 2.0f * x[i];
  for (int i = 0; i < N; ++i) want[i] = total + x[i];
  failed |= results_in_place_dropped(ctx, x, N, y, N) != 0;
  failed |= check("dropped", y, want, N);

  /* A matrix product written straight into a buffer aligned only to its
     elements. */
  float* a = malloc(sizeof(float) * I * K);
  float* b = malloc(sizeof(float) * K * J);
  float* c = malloc(sizeof(float) * (I * J + 1));
  float* c_want = malloc(sizeof(float) * I * J);
  for (int i = 0; i < I * K; ++i) a[i] = (float)((i * 7) % 13) - 6.0f;
  for (int i = 0; i < K * J; ++i) b[i] = (float)((i * 5) % 11) - 5.0f;
  for (int i = 0; i < I; ++i)
    for (int j = 0; j < J; ++j) {
      float sum = 0;
      for (int k = 0; k < K; ++k) sum += a[i * K + k] * b[k * J + j];
      c_want[i * J + j] = sum;
    }
  failed |= results_in_place_matmul(ctx, a, I, K, b, K, J, c + 1, I, J) != 0;
  failed |= check("matmul", c + 1, c_want, I * J);

  /* An error after the result's array was made in the caller's buffer. */
  results_in_place_status s = results_in_place_picked(ctx, x, N, 99, y, N);
  printf("picked 99: status %d: %s\n", (int)s,
         results_in_place_last_error(ctx));
  for (int i = 0; i < N; ++i) want[i] = 2.0f * x[i] + x[1];
  failed |= results_in_place_picked(ctx, x, N, 1, y, N) != 0;
  failed |= check("picked 1", y, want, N);

  free(a);
  free(b);
  free(c);
  free(c_want);
  results_in_place_context_destroy(ctx);
  return failed;
}
