// Measures -O3's inline tanh (Note [Fast tanh]) against long double tanhl
// over about 2e6 points in each range and fails above 3 ulp.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tanh_ulp.h"

#define N 1999999

static double Ulp64(double got, long double want) {
  double w = (double)want;
  if (got == w) return 0;
  double u = nextafter(fabs(w), INFINITY) - fabs(w);
  return (double)(fabsl((long double)got - want) / u);
}

static double Ulp32(float got, long double want) {
  float w = (float)want;
  if (got == w) return 0;
  float u = nextafterf(fabsf(w), INFINITY) - fabsf(w);
  return (double)(fabsl((long double)got - want) / u);
}

int main(void) {
  static const double ranges[][2] = {
      {-1e-6, 1e-6}, {-0.6, 0.6}, {0.54, 0.56}, {-3, 3}, {-25, 25}};
  double* x = malloc(N * sizeof(double));
  double* y = malloc(N * sizeof(double));
  float* xf = malloc(N * sizeof(float));
  float* yf = malloc(N * sizeof(float));
  tanh_ulp_context* ctx = tanh_ulp_context_create(NULL);
  int failed = 0;
  for (int r = 0; r < 5; ++r) {
    double lo = ranges[r][0], hi = ranges[r][1];
    for (int i = 0; i < N; ++i) {
      x[i] = lo + (hi - lo) * i / (N - 1.0);
      xf[i] = (float)x[i];
    }
    if (tanh_ulp_tanh64(ctx, x, N, y, N) != 0 ||
        tanh_ulp_tanh32(ctx, xf, N, yf, N) != 0) {
      printf("error: %s\n", tanh_ulp_last_error(ctx));
      return 1;
    }
    double worst64 = 0, worst32 = 0;
    for (int i = 0; i < N; ++i) {
      worst64 = fmax(worst64, Ulp64(y[i], tanhl((long double)x[i])));
      worst32 = fmax(worst32, Ulp32(yf[i], tanhl((long double)xf[i])));
    }
    printf("[%g, %g]: f64 %s, f32 %s\n", lo, hi,
           worst64 <= 3 ? "within 3 ulp" : "ABOVE 3 ulp",
           worst32 <= 3 ? "within 3 ulp" : "ABOVE 3 ulp");
    fprintf(stderr, "[%g, %g]: f64 %.2f ulp, f32 %.2f ulp\n", lo, hi, worst64,
            worst32);
    failed |= worst64 > 3 || worst32 > 3;
  }
  tanh_ulp_context_destroy(ctx);
  free(x);
  free(y);
  free(xf);
  free(yf);
  return failed;
}
