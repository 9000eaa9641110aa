/* small_lib's entries with device pointers (set_device_memory(ctx, 1)) against
   the fake driver, whose device memory is host memory: the host ops read
   the inputs through the runtime's copies to the host and write the
   results back to the caller's device buffers. Prints what differs from a
   host context. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "small_lib.h"

typedef unsigned long long Pointer;
enum { kN = SMALL_LIB_DIM_n, kM = SMALL_LIB_DIM_m, kBig = SMALL_LIB_DIM_big };

static int Same(const char* what, const double* a, const double* b, int n) {
  for (int i = 0; i < n; ++i)
    if (a[i] != b[i]) {
      printf("%s: element %d differs: %g vs %g\n", what, i, a[i], b[i]);
      return 0;
    }
  printf("%s: %d values agree\n", what, n);
  return 1;
}

int main(void) {
  void* driver = dlopen(getenv("DELTA_CUDA_DRIVER"), RTLD_NOW);
  if (driver == NULL) return 1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(driver, "cuInit");
  int (*mem_alloc)(Pointer*, size_t) =
      (int (*)(Pointer*, size_t))dlsym(driver, "cuMemAlloc_v2");
  if (init == NULL || mem_alloc == NULL || init(0) != 0) return 1;
  static double x[kN], host_out[kM * kN];
  for (int i = 0; i < kN; ++i) x[i] = i % 13 - 6;
  Pointer dx = 0, dout = 0;
  mem_alloc(&dx, sizeof x);
  mem_alloc(&dout, sizeof host_out);
  /* The fake's device memory is host memory. */
  double* device_x = (double*)dx;
  double* device_out = (double*)dout;
  for (int i = 0; i < kN; ++i) device_x[i] = x[i];

  small_lib_context* host_ctx = small_lib_context_create(NULL);
  small_lib_context* device_ctx = small_lib_context_create(NULL);
  small_lib_context_set_device_memory(device_ctx, 1);
  small_lib_shift(host_ctx, x, kN, 2.0, host_out, kN);
  if (small_lib_shift(device_ctx, device_x, kN, 2.0, device_out, kN) !=
      SMALL_LIB_OK)
    printf("shift: %s\n", small_lib_last_error(device_ctx));
  Same("shift", host_out, device_out, kN);
  double host_total = 0, device_total = 0;
  small_lib_total(host_ctx, x, kN, &host_total);
  small_lib_total(device_ctx, device_x, kN, &device_total);
  Same("total", &host_total, &device_total, 1);
  small_lib_spread(host_ctx, x, kN, host_out, kM, kN);
  small_lib_spread(device_ctx, device_x, kN, device_out, kM, kN);
  Same("spread", host_out, device_out, kM * kN);
  static double big[kBig];
  for (int i = 0; i < kBig; ++i) big[i] = i % 17 - 8;
  Pointer dbig = 0;
  mem_alloc(&dbig, sizeof big);
  for (int i = 0; i < kBig; ++i) ((double*)dbig)[i] = big[i];
  small_lib_total_big(host_ctx, big, kBig, &host_total);
  small_lib_total_big(device_ctx, (double*)dbig, kBig, &device_total);
  Same("total_big", &host_total, &device_total, 1);
  small_lib_context_destroy(host_ctx);
  small_lib_context_destroy(device_ctx);
  int (*mem_free)(Pointer) = (int (*)(Pointer))dlsym(driver, "cuMemFree_v2");
  mem_free(dx);
  mem_free(dout);
  mem_free(dbig);
  printf("done\n");
  return 0;
}
