/* Calls the library built from gpu_lib.dl (for the CPU or with
   --target=cuda: the same source) and prints every result or error, so
   that the tests can compare the two builds and check the errors of a
   machine without a GPU. */
#include <stdio.h>

#include "gpu_lib.h"

enum { kN = 1000, kM = 37, kP = 23, kK = GPU_LIB_DIM_k };

static double x[kN], a[kM * kK], b[kK * kP], product[kM * kP];

/* Prints the call's status; nonzero if it failed. */
static int Report(gpu_lib_context* ctx, const char* what,
                  gpu_lib_status status) {
  if (status == GPU_LIB_OK) return 0;
  printf("%s: status %d (%s): %s\n", what, (int)status,
         gpu_lib_status_string(status), gpu_lib_last_error(ctx));
  return 1;
}

static void Print(const char* what, const double* values, int count) {
  double sum = 0;
  for (int i = 0; i < count; ++i) sum += values[i] * (i % 7 + 1);
  printf("%s: %d values, first %g, last %g, weighted sum %.17g\n", what,
         count, values[0], values[count - 1], sum);
}

int main(void) {
  gpu_lib_context* ctx = gpu_lib_context_create(NULL);
  if (ctx == NULL) return 1;
  for (int i = 0; i < kN; ++i) x[i] = i % 13 - 6;
  for (int i = 0; i < kM * kK; ++i) a[i] = i % 5 - 2;
  for (int i = 0; i < kK * kP; ++i) b[i] = i % 3;

  /* In place, twice: the second call reads the first one's result from
     the same buffer, so a device copy kept from the first call would
     be stale. */
  for (int round = 0; round < 2; ++round)
    if (!Report(ctx, "scale", gpu_lib_scale(ctx, x, kN, 2.0, x, kN)))
      Print("scale", x, kN);
  double sum = 0;
  if (!Report(ctx, "total", gpu_lib_total(ctx, x, kN, &sum)))
    printf("total: %.17g\n", sum);
  if (!Report(ctx, "matmul",
              gpu_lib_matmul(ctx, a, kM, kK, b, kK, kP, product, kM, kP)))
    Print("matmul", product, kM * kP);

  /* A failing check inside a kernel, then a call that must succeed. */
  int64_t numerators[kN], divisors[kN], quotients[kN];
  for (int i = 0; i < kN; ++i) {
    numerators[i] = 7 * i - 300;
    divisors[i] = i % 9 - 4;
  }
  Report(ctx, "ratio (zero divisor)",
         gpu_lib_ratio(ctx, numerators, kN, divisors, kN, quotients, kN));
  for (int i = 0; i < kN; ++i)
    if (divisors[i] == 0) divisors[i] = 5;
  if (!Report(ctx, "ratio",
              gpu_lib_ratio(ctx, numerators, kN, divisors, kN, quotients,
                            kN))) {
    double as_double[kN];
    for (int i = 0; i < kN; ++i) as_double[i] = (double)quotients[i];
    Print("ratio", as_double, kN);
  }

  /* A failing check on the host, then a call that must succeed. */
  int64_t positions[3] = {4, 999, 1000};
  double picked[3];
  Report(ctx, "pick (bad position)",
         gpu_lib_pick(ctx, x, kN, positions, 3, picked, 3));
  positions[2] = 0;
  if (!Report(ctx, "pick", gpu_lib_pick(ctx, x, kN, positions, 3, picked, 3)))
    Print("pick", picked, 3);

  /* An argument error is found before the device is asked for. */
  Report(ctx, "matmul (bad size)",
         gpu_lib_matmul(ctx, a, kM, kK + 1, b, kK, kP, product, kM, kP));

  /* A second context of its own, used and destroyed first. */
  gpu_lib_context* other = gpu_lib_context_create(NULL);
  if (other == NULL) return 1;
  if (!Report(other, "total (second context)",
              gpu_lib_total(other, x, kN, &sum)))
    printf("total (second context): %.17g\n", sum);
  gpu_lib_context_destroy(other);
  if (!Report(ctx, "total (again)", gpu_lib_total(ctx, x, kN, &sum)))
    printf("total (again): %.17g\n", sum);
  gpu_lib_context_destroy(ctx);
  printf("done\n");
  return 0;
}
