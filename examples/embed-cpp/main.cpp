// Two Delta libraries (scale.dl, norms.dl) in one C++ program: DLPack
// tensors, a strided (non-contiguous) view, a dtype error, the C++
// wrapper's exceptions, and two contexts used from two threads at once.
#include <dlpack/dlpack.h>

#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "norms.h"
#include "scale.h"

namespace {

int failures = 0;

void Check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAIL %s\n", what);
    ++failures;
  }
}

// A float32 CPU tensor over `data`; strides in elements, null for compact.
DLTensor Tensor(float* data, std::vector<int64_t>& shape,
                int64_t* strides = nullptr) {
  DLTensor tensor{};
  tensor.data = data;
  tensor.device = {kDLCPU, 0};
  tensor.ndim = static_cast<int32_t>(shape.size());
  tensor.dtype = {kDLFloat, 32, 1};
  tensor.shape = shape.data();
  tensor.strides = strides;
  return tensor;
}

}  // namespace

int main() {
  scale::Context scale_ctx;
  norms::Context norms_ctx;
  // A 4 x 3 matrix, row-major: x[i][j] = i + j / 10.
  std::vector<float> x(12);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 3; ++j) x[i * 3 + j] = i + j / 10.0f;
  std::vector<int64_t> shape = {4, 3};
  DLTensor input = Tensor(x.data(), shape);

  // Both libraries define `apply` and `total`; each keeps its own.
  std::vector<float> scaled(12), row_norms(4);
  std::vector<int64_t> norms_shape = {4};
  DLTensor scaled_tensor = Tensor(scaled.data(), shape);
  DLTensor norms_tensor = Tensor(row_norms.data(), norms_shape);
  scale_ctx.check(scale_apply_dl(scale_ctx, &input, 2.0f, &scaled_tensor));
  norms_ctx.check(norms_apply_dl(norms_ctx, &input, &norms_tensor));
  float sum = 0, largest = 0;
  scale_ctx.check(scale_total_dl(scale_ctx, &input, &sum));
  norms_ctx.check(norms_total_dl(norms_ctx, &input, &largest));
  Check(scaled[5] == 2 * x[5], "scale_apply");
  Check(std::fabs(row_norms[1] - std::sqrt(1 + 1.1f * 1.1f + 1.2f * 1.2f)) <
            1e-5f,
        "norms_apply");
  Check(std::fabs(sum - 19.2f) < 1e-4f, "scale_total");
  Check(largest == 3.2f, "norms_total");
  std::printf("scale: x[1][2] * 2 = %g, sum = %g; norms: |row 1| = %g, max = %g\n",
              scaled[5], sum, row_norms[1], largest);

  // The transpose comes back in the order the signature writes: [c, r].
  std::vector<float> transposed(12);
  std::vector<int64_t> transposed_shape = {3, 4};
  DLTensor transposed_tensor = Tensor(transposed.data(), transposed_shape);
  scale_ctx.check(scale_transpose_dl(scale_ctx, &input, &transposed_tensor));
  Check(transposed[2 * 4 + 1] == x[1 * 3 + 2], "scale_transpose");

  // A non-contiguous view (rows 0 and 2: row stride 6) is copied in.
  std::vector<int64_t> view_shape = {2, 3};
  int64_t view_strides[] = {6, 1};
  DLTensor view = Tensor(x.data(), view_shape, view_strides);
  std::vector<float> view_norms(2);
  std::vector<int64_t> two = {2};
  DLTensor view_norms_tensor = Tensor(view_norms.data(), two);
  norms_ctx.check(norms_apply_dl(norms_ctx, &view, &view_norms_tensor));
  Check(view_norms[1] == row_norms[2], "strided view");
  std::printf("strided view: |row 2| = %g\n", view_norms[1]);

  // Errors come back as statuses (C) or exceptions (the C++ wrapper).
  input.dtype = {kDLFloat, 64, 1};
  norms_status status = norms_apply_dl(norms_ctx, &input, &norms_tensor);
  std::printf("f64 tensor: %s: %s\n", norms_status_string(status),
              norms_last_error(norms_ctx));
  Check(status == NORMS_ERROR_ARGUMENT, "dtype error");
  input.dtype = {kDLFloat, 32, 1};
  try {
    scale_ctx.check(scale_apply_dl(scale_ctx, &input, 2.0f, &norms_tensor));
    Check(false, "a wrong result shape throws");
  } catch (const scale::Error& error) {
    std::printf("wrong result shape: %s\n", error.what());
    Check(error.status() == SCALE_ERROR_SIZE, "size error");
  }

  // Contexts are independent: one per thread, both running at once.
  auto worker = [&](bool use_scale, float* out) {
    scale::Context own_scale;
    norms::Context own_norms;
    std::vector<float> buffer(12);
    std::vector<int64_t> local_shape = {4, 3}, local_norms = {4};
    DLTensor in = Tensor(x.data(), local_shape);
    for (int round = 0; round < 2000; ++round) {
      if (use_scale) {
        DLTensor result = Tensor(buffer.data(), local_shape);
        own_scale.check(scale_apply_dl(own_scale, &in, 3.0f, &result));
        *out = buffer[11];
      } else {
        DLTensor result = Tensor(buffer.data(), local_norms);
        own_norms.check(norms_apply_dl(own_norms, &in, &result));
        *out = buffer[3];
      }
    }
  };
  float from_scale = 0, from_norms = 0;
  std::thread first(worker, true, &from_scale);
  std::thread second(worker, false, &from_norms);
  first.join();
  second.join();
  Check(from_scale == 3 * x[11] && from_norms == row_norms[3], "threads");
  std::printf("two threads: %g %g\n", from_scale, from_norms);

  std::printf(failures ? "%d failures\n" : "all checks passed\n", failures);
  return failures ? 1 : 0;
}
