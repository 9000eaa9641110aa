/* What the GPU benchmark drivers share (bench/cuda/run.py builds and runs
   them): per-call timing, JSON lines on stdout, agreement checks, inputs
   that torch_mlp.py can reproduce, and DLPack tensors over device memory.
   Valid C99 and C++ (chain_bench.cu includes it through nvcc). */
#ifndef DELTA_BENCH_CUDA_H_
#define DELTA_BENCH_CUDA_H_

#include <cuda_runtime_api.h>
#include <dlpack/dlpack.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A CUDA runtime call that must succeed: the driver cannot go on without
   it, so it says FAIL and exits. */
#define BENCH_CUDA(call)                                      \
  do {                                                        \
    cudaError_t bench_error_ = (call);                        \
    if (bench_error_ != cudaSuccess) {                        \
      printf("{\"fail\": \"CUDA error in %s: %s\"}\n", #call, \
             cudaGetErrorString(bench_error_));               \
      exit(3);                                                \
    }                                                         \
  } while (0)

static inline double BenchNow(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static inline double BenchEnv(const char* name, double fallback) {
  const char* text = getenv(name);
  return text && *text ? atof(text) : fallback;
}

static inline int BenchCompare(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct {
  double median_s;
  int reps;
} BenchTiming;

/* Set by drivers run with --cpu-only (run.py --self-test, no GPU): nothing
   touches CUDA then. */
static int bench_cpu_only = 0;

static inline void BenchSynchronize(void) {
  if (!bench_cpu_only) BENCH_CUDA(cudaDeviceSynchronize());
}

/* Calls fn once to warm up (the first call loads the module), then times
   each call from its start to the end of a cudaDeviceSynchronize() after it
   returns: at least BENCH_MIN_REPS (5) calls and BENCH_MIN_TIME (0.2) s,
   but stops once BENCH_MAX_TIME (3) s are spent, so that a pathologically
   slow call cannot eat the run's budget (`reps` says how many were
   timed). Returns the median. */
static inline BenchTiming BenchTime(void (*fn)(void*), void* ctx) {
  enum { kMaxReps = 1000 };
  static double times[kMaxReps];
  double min_time = BenchEnv("BENCH_MIN_TIME", 0.2);
  double max_time = BenchEnv("BENCH_MAX_TIME", 3.0);
  int min_reps = (int)BenchEnv("BENCH_MIN_REPS", 5);
  fn(ctx);
  BenchSynchronize();
  int reps = 0;
  double total = 0;
  while (reps < kMaxReps && (reps < min_reps || total < min_time) &&
         !(reps > 0 && total >= max_time)) {
    double start = BenchNow();
    fn(ctx);
    BenchSynchronize();
    times[reps] = BenchNow() - start;
    total += times[reps++];
  }
  qsort(times, (size_t)reps, sizeof(double), BenchCompare);
  BenchTiming timing;
  timing.median_s = reps % 2 ? times[reps / 2]
                             : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
  timing.reps = reps;
  return timing;
}

/* One measurement: `work` units of `unit` per call (flop, byte, step). */
static inline void BenchReport(const char* bench_case, const char* params,
                               const char* impl, BenchTiming timing,
                               double work, const char* unit) {
  printf(
      "{\"case\": \"%s\", \"params\": \"%s\", \"impl\": \"%s\", "
      "\"median_s\": %.9g, \"reps\": %d, \"work\": %.9g, \"unit\": \"%s\"}\n",
      bench_case, params, impl, timing.median_s, timing.reps, work, unit);
  fflush(stdout);
}

/* A value run.py needs besides timings (a checksum for PyTorch's). */
static inline void BenchValue(const char* bench_case, const char* params,
                              const char* name, double value) {
  printf(
      "{\"case\": \"%s\", \"params\": \"%s\", \"value\": \"%s\", "
      "\"x\": %.17g}\n",
      bench_case, params, name, value);
  fflush(stdout);
}

/* A failure that ends this size of the case (a Delta status, say). */
static inline void BenchFail(const char* bench_case, const char* params,
                             const char* message) {
  printf("{\"case\": \"%s\", \"params\": \"%s\", \"fail\": \"", bench_case,
         params);
  for (const char* c = message; *c; ++c) {
    if (*c == '"' || *c == '\\') putchar('\\');
    putchar(*c == '\n' ? ' ' : *c);
  }
  printf("\"}\n");
  fflush(stdout);
}

/* Agreement of `got` with `want` (n entries): the largest difference over
   the largest |want| (at least `floor`), at most `tolerance`. Reported as a
   check line; returns whether it passed. */
static inline int BenchCheck(const char* bench_case, const char* params,
                             const char* what, const double* got,
                             const double* want, int64_t n, double tolerance,
                             double floor) {
  double scale = floor, error = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < n; ++i)
    if (fabs(want[i]) > scale) scale = fabs(want[i]);
  for (int64_t i = 0; i < n; ++i) {
    double difference = fabs(got[i] - want[i]);
    if (!(difference <= error)) {  // NaN counts as the worst
      error = isnan(difference) ? INFINITY : difference;
      worst = i;
    }
  }
  int ok = error / scale <= tolerance;
  printf(
      "{\"case\": \"%s\", \"params\": \"%s\", \"check\": \"%s\", "
      "\"error\": %.3g, \"tolerance\": %.3g, \"ok\": %s",
      bench_case, params, what, error / scale, tolerance,
      ok ? "true" : "false");
  if (!ok && n > 0)
    printf(", \"at\": %lld, \"got\": %.9g, \"want\": %.9g", (long long)worst,
           got[worst], want[worst]);
  printf("}\n");
  fflush(stdout);
  return ok;
}

/* Deterministic inputs: entry i of stream `seed` is offset + scale * u with
   u = ((i * 2654435761 + seed * 97531) mod 2^32 >> 8) / 2^24, exact in f32;
   torch_mlp.py computes the same values. */
static inline float BenchInput(int64_t i, uint32_t seed, float offset,
                               float scale) {
  uint32_t h = (uint32_t)((uint64_t)i * 2654435761u + (uint64_t)seed * 97531u);
  float u = (float)(h >> 8) / 16777216.0f;
  return offset + scale * u;
}

static inline float* BenchInputsF32(int64_t n, uint32_t seed, float offset,
                                    float scale) {
  float* x = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
  for (int64_t i = 0; i < n; ++i) x[i] = BenchInput(i, seed, offset, scale);
  return x;
}

static inline double* BenchInputsF64(int64_t n, uint32_t seed, float offset,
                                     float scale) {
  double* x = (double*)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) x[i] = BenchInput(i, seed, offset, scale);
  return x;
}

/* A copy of `bytes` host bytes in new device memory. */
static inline void* BenchToDevice(const void* host, size_t bytes) {
  void* device = NULL;
  BENCH_CUDA(cudaMalloc(&device, bytes > 0 ? bytes : 1));
  BENCH_CUDA(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice));
  return device;
}

static inline double* BenchF32ToF64(const float* x, int64_t n) {
  double* y = (double*)malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; ++i) y[i] = x[i];
  return y;
}

/* A dense row-major DLPack tensor (strides NULL) over `data`, on GPU 0 when
   `on_device` and in host memory otherwise; `shape` must outlive it. */
static inline DLTensor BenchTensor(void* data, int on_device, uint8_t code,
                                   uint8_t bits, int32_t ndim, int64_t* shape) {
  DLTensor tensor;
  memset(&tensor, 0, sizeof tensor);
  tensor.data = data;
  tensor.device.device_type = on_device ? kDLCUDA : kDLCPU;
  tensor.device.device_id = 0;
  tensor.ndim = ndim;
  tensor.dtype.code = code;
  tensor.dtype.bits = bits;
  tensor.dtype.lanes = 1;
  tensor.shape = shape;
  tensor.strides = NULL;
  tensor.byte_offset = 0;
  return tensor;
}

#endif
