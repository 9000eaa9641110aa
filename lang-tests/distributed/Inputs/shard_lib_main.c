/* The C ABI of a library with a sharded dim (c_abi.dl): a context on
   MPI_COMM_WORLD and one on a split communicator give each process's
   block the same results as one process given the whole arrays; a run-time
   error on one process fails the call on every process, and the
   communicator works again once it is set again. Process 0 prints. */
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "shard_lib.h"

enum { kBatch = SHARD_LIB_DIM_batch, kFeat = SHARD_LIB_DIM_feat };

static int rank;

/* Prints, on process 0, each process's line in rank order. */
static void PrintAll(const char* line) {
  char mine[256] = {0}, all[16][256];
  int processes = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &processes);
  snprintf(mine, sizeof mine, "%s", line);
  MPI_Gather(mine, 256, MPI_CHAR, all, 256, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0)
    for (int p = 0; p < processes && p < 16; ++p) printf("%d: %s\n", p, all[p]);
  fflush(stdout);
}

static int Close(const float* a, const float* b, int n) {
  for (int i = 0; i < n; ++i)
    if (fabsf(a[i] - b[i]) > 1e-5f * (1 + fabsf(b[i]))) return 0;
  return 1;
}

/* The gradient and residuals of this process's block, against the whole. */
static void Check(shard_lib_context* ctx, const char* what, const float* w,
                  const float* x, const float* y, const float* whole_grad,
                  const float* whole_residuals) {
  int64_t offset = -1, extent = -1;
  char line[256];
  shard_lib_shard_block(ctx, &offset, &extent);
  float grad[kFeat], residuals[kBatch];
  shard_lib_status a = shard_lib_loss_grad(
      ctx, w, kFeat, x + offset * kFeat, extent, kFeat, y + offset, extent,
      grad, kFeat);
  shard_lib_status b = shard_lib_residuals(
      ctx, w, kFeat, x + offset * kFeat, extent, kFeat, y + offset, extent,
      residuals, extent);
  snprintf(line, sizeof line,
           "%s: block %lld+%lld, status %d %d, gradient %s, residuals %s", what,
           (long long)offset, (long long)extent, a, b,
           Close(grad, whole_grad, kFeat) ? "equal" : "DIFFERENT",
           Close(residuals, whole_residuals + offset, (int)extent)
               ? "equal"
               : "DIFFERENT");
  PrintAll(line);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  float w[kFeat] = {0.3f, -0.2f, 0.5f}, x[kBatch * kFeat], y[kBatch];
  for (int i = 0; i < kBatch * kFeat; ++i) x[i] = sinf((float)i);
  for (int b = 0; b < kBatch; ++b) y[b] = 0.1f * (float)b;

  /* Before a communicator, a context runs on this process alone. */
  shard_lib_context* ctx = shard_lib_context_create(NULL);
  float whole_grad[kFeat], whole_residuals[kBatch];
  if (shard_lib_loss_grad(ctx, w, kFeat, x, kBatch, kFeat, y, kBatch,
                          whole_grad, kFeat) != SHARD_LIB_OK ||
      shard_lib_residuals(ctx, w, kFeat, x, kBatch, kFeat, y, kBatch,
                          whole_residuals, kBatch) != SHARD_LIB_OK) {
    fprintf(stderr, "one process: %s\n", shard_lib_last_error(ctx));
    return 1;
  }

  if (shard_lib_context_set_comm(ctx, MPI_COMM_WORLD) != SHARD_LIB_OK) {
    fprintf(stderr, "set_comm: %s\n", shard_lib_last_error(ctx));
    return 1;
  }
  Check(ctx, "world", w, x, y, whole_grad, whole_residuals);

  /* A size that is not this process's block is an argument error, on
     every process. */
  float grad[kFeat];
  shard_lib_status status = shard_lib_loss_grad(
      ctx, w, kFeat, x, kBatch, kFeat, y, kBatch, grad, kFeat);
  char line[256];
  snprintf(line, sizeof line, "whole arrays: status %d: %s", status,
           shard_lib_last_error(ctx));
  PrintAll(line);
  shard_lib_context_set_comm(ctx, MPI_COMM_WORLD);

  /* A run-time error at global position 5: one process fails, the others
     learn it; then the communicator is set again and works. */
  int64_t offset = 0, extent = 0;
  shard_lib_shard_block(ctx, &offset, &extent);
  float sum = 0;
  status = shard_lib_fail_at(ctx, y + offset, extent, 5, &sum);
  snprintf(line, sizeof line, "fail_at: status %d: %s", status,
           shard_lib_last_error(ctx));
  PrintAll(line);
  status = shard_lib_fail_at(ctx, y + offset, extent, -1, &sum);
  snprintf(line, sizeof line, "after the failure: status %d: %s", status,
           shard_lib_last_error(ctx));
  PrintAll(line);
  shard_lib_context_set_comm(ctx, MPI_COMM_WORLD);
  status = shard_lib_fail_at(ctx, y + offset, extent, -1, &sum);
  snprintf(line, sizeof line, "set again: status %d, sum %g", status, sum);
  PrintAll(line);

  /* A communicator of the even and of the odd processes. */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  shard_lib_context_set_comm(ctx, half);
  Check(ctx, "split", w, x, y, whole_grad, whole_residuals);

  shard_lib_context_destroy(ctx);
  MPI_Comm_free(&half);
  MPI_Finalize();
  return 0;
}
