// The fused chain z = x * y + x * 0.5 - y (chain.dl's `chain`, writing z
// into a device tensor) and its reduction sum(z * z) (`chain_sum_squares`)
// per call, against a device-to-device copy of x in the same run: the copy
// gives the bandwidth a one-pass kernel can reach. Inputs are made and
// results checked on the device. Usage: chain_bench N ...
#include <dlpack/dlpack.h>  // declares the libraries' _dl entries

#include "bench_cuda.h"
#include "chain.h"

namespace {

__global__ void Fill(float* x, int64_t n, uint32_t seed) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    uint32_t h = (uint32_t)((uint64_t)i * 2654435761u + seed * 97531u);
    x[i] = -1.0f + 2.0f * ((float)(h >> 8) / 16777216.0f);
  }
}

// The largest |z - chain(x, y)| (as float bits: they order like the
// values when non-negative) and sum(chain(x, y)^2) in double.
__global__ void Reference(const float* x, const float* y, const float* z,
                          int64_t n, unsigned* max_error, double* sum) {
  double partial = 0;
  float error = 0;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    double want = (double)x[i] * y[i] + (double)x[i] * 0.5 - y[i];
    partial += want * want;
    float difference = fabsf(z[i] - (float)want);
    error = difference != difference ? INFINITY : fmaxf(error, difference);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    partial += __shfl_down_sync(0xffffffffu, partial, offset);
    error = fmaxf(error, __shfl_down_sync(0xffffffffu, error, offset));
  }
  if (threadIdx.x % 32 == 0) {
    atomicAdd(sum, partial);
    atomicMax(max_error, __float_as_uint(error));
  }
}

struct Chain {
  chain_context* ctx;
  float *x, *y, *z, *copy;
  int64_t n;
  int copies;  // per timed run of RunCopy
  DLTensor tx, ty, tz;
  float sum;
  chain_status status;
};

void RunCopy(void* arg) {
  Chain* c = static_cast<Chain*>(arg);
  for (int i = 0; i < c->copies; ++i)
    BENCH_CUDA(cudaMemcpyAsync(c->copy, c->x, (size_t)c->n * sizeof(float),
                               cudaMemcpyDeviceToDevice));
}

void RunChain(void* arg) {
  Chain* c = static_cast<Chain*>(arg);
  if (c->status == CHAIN_OK)
    c->status = chain_chain_dl(c->ctx, &c->tx, &c->ty, &c->tz);
}

void RunSum(void* arg) {
  Chain* c = static_cast<Chain*>(arg);
  if (c->status == CHAIN_OK)
    c->status = chain_chain_sum_squares_dl(c->ctx, &c->tx, &c->ty, &c->sum);
}

bool Report(Chain& c, const char* params, const char* impl, BenchTiming timing,
            double bytes) {
  if (c.status == CHAIN_OK) {
    BenchReport("chain", params, impl, timing, bytes, "byte");
    return true;
  }
  BenchFail("chain", params, chain_last_error(c.ctx));
  return false;
}

bool RunSize(chain_context* ctx, int64_t n) {
  char params[64];
  snprintf(params, sizeof params, "f32 n=%lld", (long long)n);
  Chain c = {};
  c.ctx = ctx;
  c.n = n;
  size_t bytes = (size_t)n * sizeof(float);
  BENCH_CUDA(cudaMalloc(&c.x, bytes));
  BENCH_CUDA(cudaMalloc(&c.y, bytes));
  BENCH_CUDA(cudaMalloc(&c.z, bytes));
  BENCH_CUDA(cudaMalloc(&c.copy, bytes));
  Fill<<<1024, 256>>>(c.x, n, 21);
  Fill<<<1024, 256>>>(c.y, n, 22);
  BENCH_CUDA(cudaMemset(c.z, 0xff, bytes));  // NaNs until written
  BENCH_CUDA(cudaDeviceSynchronize());
  int64_t shape[1] = {n};
  c.tx = BenchTensor(c.x, 1, kDLFloat, 32, 1, shape);
  c.ty = BenchTensor(c.y, 1, kDLFloat, 32, 1, shape);
  c.tz = BenchTensor(c.z, 1, kDLFloat, 32, 1, shape);
  c.status = CHAIN_OK;

  bool ok = true;
  // Each copy reads and writes 4n bytes: 8n of traffic. Small copies run
  // back to back, up to 2^28 elements per timed run (~1 ms), so that the
  // synchronization after them does not lower the bandwidth they measure.
  c.copies = n >= (1 << 28) ? 1 : (int)fmin(64, (double)(1 << 28) / n);
  BenchReport("chain", params, "copy", BenchTime(RunCopy, &c),
              8.0 * n * c.copies, "byte");
  ok &= Report(c, params, "delta chain", BenchTime(RunChain, &c), 12.0 * n);
  c.status = CHAIN_OK;
  ok &= Report(c, params, "delta sum", BenchTime(RunSum, &c), 8.0 * n);
  if (!ok) return false;

  unsigned* max_error;
  double* sum;
  BENCH_CUDA(cudaMalloc(&max_error, sizeof(unsigned)));
  BENCH_CUDA(cudaMalloc(&sum, sizeof(double)));
  BENCH_CUDA(cudaMemset(max_error, 0, sizeof(unsigned)));
  BENCH_CUDA(cudaMemset(sum, 0, sizeof(double)));
  Reference<<<1024, 256>>>(c.x, c.y, c.z, n, max_error, sum);
  unsigned error_bits;
  double want;
  BENCH_CUDA(cudaMemcpy(&error_bits, max_error, sizeof error_bits,
                        cudaMemcpyDeviceToHost));
  BENCH_CUDA(cudaMemcpy(&want, sum, sizeof want, cudaMemcpyDeviceToHost));
  float error;
  memcpy(&error, &error_bits, sizeof error);
  // |z| < 2.5: rounding of three float operations (fused or not).
  double zero = 0, got_error = error;
  ok &= BenchCheck("chain", params, "z vs reference", &got_error, &zero, 1,
                   1e-5, 1) != 0;
  // A float sum of n squares in any reasonable order (blocked, tree).
  double got = c.sum;
  ok &= BenchCheck("chain", params, "sum vs reference", &got, &want, 1, 1e-4,
                   1) != 0;
  cudaFree(max_error);
  cudaFree(sum);
  cudaFree(c.x);
  cudaFree(c.y);
  cudaFree(c.z);
  cudaFree(c.copy);
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  chain_context* ctx = chain_context_create(nullptr);
  if (ctx == nullptr) {
    printf("{\"fail\": \"cannot create a context\"}\n");
    return 3;
  }
  bool ok = true;
  for (int i = 1; i < argc; ++i) {
    long long n = atoll(argv[i]);
    if (n <= 0) {
      fprintf(stderr, "usage: chain_bench N ...\n");
      return 64;
    }
    ok &= RunSize(ctx, n);
  }
  chain_context_destroy(ctx);
  return ok ? 0 : 2;
}
