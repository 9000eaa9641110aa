/* Calls the Delta library built from model.dl: trains the perceptron for a
   few steps, checks its forward pass against a C reference, and shows that
   bad calls return an error code and a message instead of crashing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

enum { kBatch = 6 };

/* Exits the program unless `status` is what the test expects. */
static int failures = 0;
static void Expect(model_context* ctx, model_status status,
                   model_status expected, const char* what) {
  if (status == expected) {
    if (status != MODEL_OK)
      printf("%s: %s: %s\n", what, model_status_string(status),
             model_last_error(ctx));
    return;
  }
  printf("FAIL %s: got %d (%s), expected %d\n", what, (int)status,
         model_last_error(ctx), (int)expected);
  ++failures;
}

/* A dense layer's storage and its C view. */
static void InitDense(model_Dense* layer, float* w, float* b, int64_t in,
                      int64_t out, int seed) {
  for (int64_t i = 0; i < in * out; ++i)
    w[i] = 0.5f * sinf((float)(seed * 31 + 7 * i));
  for (int64_t j = 0; j < out; ++j) b[j] = 0.0f;
  layer->w = w;
  layer->w_sizes[0] = in;
  layer->w_sizes[1] = out;
  layer->b = b;
  layer->b_sizes[0] = out;
}

/* The same network in plain C, for one example. */
static void Reference(const model_Mlp* p, const float* x, float* scores) {
  float hidden[MODEL_DIM_hidden];
  for (int j = 0; j < MODEL_DIM_hidden; ++j) {
    float sum = p->l1.b[j];
    for (int i = 0; i < MODEL_DIM_feat; ++i)
      sum += p->l1.w[i * MODEL_DIM_hidden + j] * x[i];
    hidden[j] = sum > 0 ? sum : 0;
  }
  for (int k = 0; k < MODEL_DIM_classes; ++k) {
    float sum = p->l2.b[k];
    for (int j = 0; j < MODEL_DIM_hidden; ++j)
      sum += p->l2.w[j * MODEL_DIM_classes + k] * hidden[j];
    scores[k] = sum;
  }
}

int main(void) {
  model_context* ctx = model_context_create(NULL);
  if (ctx == NULL) return 1;

  float w1[MODEL_DIM_feat * MODEL_DIM_hidden], b1[MODEL_DIM_hidden];
  float w2[MODEL_DIM_hidden * MODEL_DIM_classes], b2[MODEL_DIM_classes];
  model_Mlp p;
  InitDense(&p.l1, w1, b1, MODEL_DIM_feat, MODEL_DIM_hidden, 1);
  InitDense(&p.l2, w2, b2, MODEL_DIM_hidden, MODEL_DIM_classes, 2);

  float x[kBatch * MODEL_DIM_feat];
  int64_t labels[kBatch];
  for (int n = 0; n < kBatch; ++n) {
    for (int f = 0; f < MODEL_DIM_feat; ++f)
      x[n * MODEL_DIM_feat + f] = cosf((float)(4 * n + f));
    labels[n] = n % MODEL_DIM_classes;
  }

  /* Built with --target=cuda on a machine without a GPU, every call fails
     like this one: a run-time error status and a message. */
  float before = 0, after = 0;
  model_status status = model_loss(ctx, &p, x, kBatch, MODEL_DIM_feat, labels,
                                   kBatch, &before);
  if (status == MODEL_ERROR_RUNTIME &&
      strstr(model_last_error(ctx), "no CUDA device") != NULL) {
    printf("no GPU: %s\n", model_last_error(ctx));
    model_context_destroy(ctx);
    return 0;
  }
  Expect(ctx, status, MODEL_OK, "loss");

  /* Training: the result may alias the parameters (updated in place). */
  for (int t = 0; t < 100; ++t)
    Expect(ctx, model_step(ctx, &p, x, kBatch, MODEL_DIM_feat, labels, kBatch,
                           0.5f, &p),
           MODEL_OK, "step");
  Expect(ctx, model_loss(ctx, &p, x, kBatch, MODEL_DIM_feat, labels, kBatch,
                         &after),
         MODEL_OK, "loss");
  printf("loss before: %.4f, after 100 steps: %.4f\n", before, after);
  if (!(after < before)) {
    printf("FAIL the loss did not decrease\n");
    ++failures;
  }

  /* The forward pass agrees with the C reference. */
  int64_t sizes[2];
  Expect(ctx, model_forward_result_sizes(kBatch, sizes), MODEL_OK, "sizes");
  float scores[kBatch * MODEL_DIM_classes];
  Expect(ctx, model_forward(ctx, &p, x, kBatch, MODEL_DIM_feat, scores,
                            sizes[0], sizes[1]),
         MODEL_OK, "forward");
  for (int n = 0; n < kBatch; ++n) {
    float expected[MODEL_DIM_classes];
    Reference(&p, &x[n * MODEL_DIM_feat], expected);
    for (int k = 0; k < MODEL_DIM_classes; ++k)
      if (fabsf(scores[n * MODEL_DIM_classes + k] - expected[k]) > 1e-4f) {
        printf("FAIL forward[%d][%d] = %g, expected %g\n", n, k,
               scores[n * MODEL_DIM_classes + k], expected[k]);
        ++failures;
      }
  }
  printf("forward matches the C reference\n");

  /* Errors: an error code and a message, no crash, the context usable. */
  float value = 0;
  Expect(ctx, model_forward(ctx, &p, x, kBatch, 5, scores, kBatch, 3),
         MODEL_ERROR_SIZE, "feat given as 5");
  Expect(ctx, model_forward(ctx, &p, x, kBatch, MODEL_DIM_feat, scores, 4, 3),
         MODEL_ERROR_SIZE, "result with 4 rows for 6 examples");
  Expect(ctx, model_pick(ctx, x, 4, 10, &value), MODEL_ERROR_RUNTIME,
         "pick(x, 10)");
  Expect(ctx, model_pick(ctx, x, 4, 2, &value), MODEL_OK, "pick(x, 2)");
  if (value != x[2]) {
    printf("FAIL pick gave %g\n", value);
    ++failures;
  }
  Expect(ctx, model_running_sum(ctx, x, 4, 9, &value), MODEL_ERROR_RUNTIME,
         "running_sum(x, 9)");
  Expect(ctx, model_running_sum(ctx, x, 4, 1, &value), MODEL_OK,
         "running_sum(x, 1)");
  if (value != x[0] + x[1]) {
    printf("FAIL running_sum gave %g\n", value);
    ++failures;
  }
  /* An error inside a loop that runs on the thread pool is reported the
     same way, on this thread. */
  enum { kMany = 200000 };
  int64_t* positions = malloc(kMany * sizeof *positions);
  float* found = malloc(kMany * sizeof *found);
  for (int64_t k = 0; k < kMany; ++k) positions[k] = k % 4;
  Expect(ctx, model_lookup(ctx, x, 4, positions, kMany, found, kMany),
         MODEL_OK, "lookup");
  for (int64_t k = 0; k < kMany; ++k) {
    if (found[k] != x[k % 4]) {
      printf("FAIL lookup gave %g at %lld\n", found[k], (long long)k);
      ++failures;
      break;
    }
  }
  /* A context with num_threads = 1 runs the same loop on this thread. */
  model_options serial_options = {1};
  model_context* serial = model_context_create(&serial_options);
  found[7] = -1;
  Expect(serial, model_lookup(serial, x, 4, positions, kMany, found, kMany),
         MODEL_OK, "lookup on one thread");
  if (found[7] != x[3]) {
    printf("FAIL lookup on one thread gave %g\n", found[7]);
    ++failures;
  }
  model_context_destroy(serial);
  positions[kMany - 10] = 4;
  Expect(ctx, model_lookup(ctx, x, 4, positions, kMany, found, kMany),
         MODEL_ERROR_RUNTIME, "lookup at position 4");
  free(positions);
  free(found);
  labels[0] = 7;
  Expect(ctx, model_loss(ctx, &p, x, kBatch, MODEL_DIM_feat, labels, kBatch,
                         &value),
         MODEL_ERROR_ARGUMENT, "label 7");
  Expect(ctx, model_loss(ctx, &p, NULL, kBatch, MODEL_DIM_feat, labels,
                         kBatch, &value),
         MODEL_ERROR_NULL, "null x");
  Expect(NULL, model_pick(NULL, x, 4, 0, &value), MODEL_ERROR_NULL,
         "null context");

  model_context_destroy(ctx);
  if (failures) printf("%d failures\n", failures);
  else printf("all checks passed\n");
  return failures ? 1 : 0;
}
