/* One MLP training step (Delta); PyTorch is timed by bench/torch_mlp.py. */
#include "bench/common.h"
#include "runtime/runtime.h"

enum { kFeat = 784, kHidden = 512, kClasses = 10, kBatch = 256 };

float DeltaTrainStep(const float* w1, const float* b1, const float* w2,
                     const float* b2, const float* xs, const int64_t* labels)
    __asm__("delta.train_step");

static float *w1, *b1, *w2, *b2, *xs;
static int64_t labels[kBatch];
static volatile float sink;

static void RunDelta(void* ctx) {
  (void)ctx;
  sink = DeltaTrainStep(w1, b1, w2, b2, xs, labels);
}

int main(void) {
  w1 = BenchRandomF32(kFeat * kHidden, 1, -0.05f, 0.05f);
  b1 = BenchRandomF32(kHidden, 2, -0.05f, 0.05f);
  w2 = BenchRandomF32(kHidden * kClasses, 3, -0.05f, 0.05f);
  b2 = BenchRandomF32(kClasses, 4, -0.05f, 0.05f);
  xs = BenchRandomF32(kBatch * kFeat, 5, 0, 1);
  for (int b = 0; b < kBatch; ++b) labels[b] = b % kClasses;
  BenchReport("mlp", "784-512-10 batch 256 f32", "delta",
              BenchMedian(RunDelta, 0), 1, "step");
  return 0;
}
