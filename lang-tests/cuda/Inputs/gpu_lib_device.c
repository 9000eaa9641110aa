/* gpu_lib's entries called with device pointers (a context created with
   set_device_memory(ctx, 1)) give the same results as with host arrays
   (library_device_memory.dl). Uses the CUDA driver directly for memory. */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_lib.h"

typedef unsigned long long Pointer;
enum { kN = 1000, kM = 37, kP = 23, kK = GPU_LIB_DIM_k };

static int (*mem_alloc)(Pointer*, size_t);
static int (*copy_in)(Pointer, const void*, size_t);
static int (*copy_out)(void*, Pointer, size_t);

static double* ToDevice(const double* host, size_t count) {
  Pointer device = 0;
  if (mem_alloc(&device, count * sizeof(double)) != 0 ||
      copy_in(device, host, count * sizeof(double)) != 0)
    return NULL;
  return (double*)device;
}

static int Same(const char* what, const double* a, const double* b,
                int count) {
  for (int i = 0; i < count; ++i)
    if (a[i] != b[i]) {
      printf("%s: element %d differs: %g (host) vs %g (device)\n", what, i,
             a[i], b[i]);
      return 0;
    }
  printf("%s: %d values agree\n", what, count);
  return 1;
}

int main(void) {
  const char* name = getenv("DELTA_CUDA_DRIVER");
  void* driver = dlopen(name != NULL ? name : "libcuda.so.1", RTLD_NOW);
  if (driver == NULL) return 1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(driver, "cuInit");
  int (*get)(int*, int) = (int (*)(int*, int))dlsym(driver, "cuDeviceGet");
  int (*retain)(void**, int) =
      (int (*)(void**, int))dlsym(driver, "cuDevicePrimaryCtxRetain");
  int (*set_current)(void*) = (int (*)(void*))dlsym(driver, "cuCtxSetCurrent");
  mem_alloc = (int (*)(Pointer*, size_t))dlsym(driver, "cuMemAlloc_v2");
  copy_in = (int (*)(Pointer, const void*, size_t))dlsym(driver,
                                                          "cuMemcpyHtoD_v2");
  copy_out = (int (*)(void*, Pointer, size_t))dlsym(driver, "cuMemcpyDtoH_v2");
  int device = 0;
  void* context = NULL;
  if (init(0) != 0 || get(&device, 0) != 0 || retain(&context, device) != 0 ||
      set_current(context) != 0)
    return 1;

  static double x[kN], a[kM * kK], b[kK * kP];
  static double host_result[kN], device_result[kN];
  for (int i = 0; i < kN; ++i) x[i] = i % 13 - 6;
  for (int i = 0; i < kM * kK; ++i) a[i] = i % 5 - 2;
  for (int i = 0; i < kK * kP; ++i) b[i] = i % 3;

  gpu_lib_context* host_ctx = gpu_lib_context_create(NULL);
  gpu_lib_context* device_ctx = gpu_lib_context_create(NULL);
  gpu_lib_context_set_device_memory(device_ctx, 1);
  double* dx = ToDevice(x, kN);
  double* da = ToDevice(a, kM * kK);
  double* db = ToDevice(b, kK * kP);
  double* dout = ToDevice(host_result, kM * kP);
  if (!host_ctx || !device_ctx || !dx || !da || !db || !dout) return 1;

  /* An elementwise kernel, written in place on the device. */
  gpu_lib_scale(host_ctx, x, kN, 2.0, host_result, kN);
  if (gpu_lib_scale(device_ctx, dx, kN, 2.0, dx, kN) != GPU_LIB_OK) {
    printf("scale: %s\n", gpu_lib_last_error(device_ctx));
    return 1;
  }
  copy_out(device_result, (Pointer)dx, kN * sizeof(double));
  Same("scale", host_result, device_result, kN);

  /* A reduction to a host scalar from device memory. */
  double host_total = 0, device_total = 0;
  gpu_lib_total(host_ctx, host_result, kN, &host_total);
  gpu_lib_total(device_ctx, dx, kN, &device_total);
  Same("total", &host_total, &device_total, 1);

  /* A contraction (cuBLAS when present) into device memory. */
  gpu_lib_matmul(host_ctx, a, kM, kK, b, kK, kP, host_result, kM, kP);
  if (gpu_lib_matmul(device_ctx, da, kM, kK, db, kK, kP, dout, kM, kP) !=
      GPU_LIB_OK) {
    printf("matmul: %s\n", gpu_lib_last_error(device_ctx));
    return 1;
  }
  copy_out(device_result, (Pointer)dout, kM * kP * sizeof(double));
  Same("matmul", host_result, device_result, kM * kP);

  /* A failing check inside a kernel reads device inputs too. */
  int64_t numerators[kN], divisors[kN];
  for (int i = 0; i < kN; ++i) {
    numerators[i] = 7 * i - 300;
    divisors[i] = i % 9 - 4;
  }
  Pointer dn = 0, dd = 0, dq = 0;
  mem_alloc(&dn, sizeof numerators);
  mem_alloc(&dd, sizeof divisors);
  mem_alloc(&dq, sizeof divisors);
  copy_in(dn, numerators, sizeof numerators);
  copy_in(dd, divisors, sizeof divisors);
  gpu_lib_status status = gpu_lib_ratio(device_ctx, (int64_t*)dn, kN,
                                        (int64_t*)dd, kN, (int64_t*)dq, kN);
  printf("ratio (zero divisor): status %d: %s\n", (int)status,
         gpu_lib_last_error(device_ctx));

  gpu_lib_context_destroy(host_ctx);
  gpu_lib_context_destroy(device_ctx);
  printf("done\n");
  return 0;
}
