// cuBLAS sgemm of the size contraction.dl uses, timed with CUDA events: the
// reference for the tiled Delta kernel (built by run.py with nvcc).
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdio>

int main() {
  const int n = 4096;
  float *a, *b, *c;
  cudaMalloc(&a, sizeof(float) * n * n);
  cudaMalloc(&b, sizeof(float) * n * n);
  cudaMalloc(&c, sizeof(float) * n * n);
  cudaMemset(a, 0, sizeof(float) * n * n);
  cudaMemset(b, 0, sizeof(float) * n * n);
  cublasHandle_t handle;
  cublasCreate(&handle);
  const float one = 1, zero = 0;
  cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n,
              &zero, c, n);  // warm-up
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  const int repeats = 10;
  cudaEventRecord(start);
  for (int r = 0; r < repeats; ++r)
    cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, n, b, n,
                &zero, c, n);
  cudaEventRecord(stop);
  cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  std::printf("%.6f\n", ms / 1000 / repeats);
  return 0;
}
