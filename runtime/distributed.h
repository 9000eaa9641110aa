/* Sharded dims across MPI processes (docs/distributed.md): the block
   distribution of a dim, and the collectives that generated code and the
   interpreter call. Plain C so that generated code can call it. Built
   without MPI (DELTA_HAVE_MPI undefined), or run outside `mpirun`, every
   function is the one-process case: rank 0 of 1, collectives copy. */
#ifndef DELTA_RUNTIME_DISTRIBUTED_H_
#define DELTA_RUNTIME_DISTRIBUTED_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Joins the processes that `mpirun` started (MPI_Init_thread, funneled),
   once; a no-op outside `mpirun` or without MPI. The program's `main` and
   `dlc run` call it before the first sharded op. */
void delta_shard_init(void);
/* Leaves MPI if delta_shard_init joined it: the end of a sharded `main`.
   With DELTA_SHARD_STATS=1 it first prints to stderr the time this
   process spent inside MPI calls and the time since delta_shard_init. */
void delta_shard_finalize(void);
/* For an embedding program (the C ABI's NAME_context_set_mpi_comm):
   runs the sharded dims on the communicator whose Fortran handle
   (MPI_Comm_c2f) is `fortran_comm`, for every context of the process.
   MPI must be initialized; every process of the communicator calls it
   (it duplicates the communicator). Returns 0, or -1 when MPI is not
   initialized or this build has no MPI. */
int32_t delta_shard_use_comm(int64_t fortran_comm);
/* For libraries (Note [Failures in a library] in
   docs/internals/distribute.md): a call that fails on this process tells
   every other process of the communicator, whose collectives then fail
   instead of waiting (report_failure); a call that succeeded here ends
   with agree, which fails when another process failed. No-ops unless
   delta_shard_use_comm gave a communicator of several processes. */
void delta_shard_report_failure(const char* message);
void delta_shard_agree(void);
/* Whether this process runs with others (MPI, more than one process). */
int32_t delta_shard_running(void);
/* This process's rank and the number of processes (0 and 1 before
   delta_shard_init, outside `mpirun` or without MPI). */
int32_t delta_shard_rank(void);
int32_t delta_shard_processes(void);
/* Whether this process is the one that prints and writes files: process
   0, or the one DELTA_SHARD_ROOT names (tests use it to see that every
   process holds the same replicated values). */
int32_t delta_shard_is_root(void);

/* Block distribution of a dim of `global` elements: the first global % P
   processes hold one element more. extent: how many this process holds;
   offset: the global position of its first. */
int64_t delta_shard_extent(int64_t global);
int64_t delta_shard_offset(int64_t global);

/* The op of a collective: the reductions of the language, in the order of
   the compiler's ir::ReduceKind. */
enum {
  DELTA_COMBINE_SUM = 0,
  DELTA_COMBINE_PROD = 1,
  DELTA_COMBINE_MAX = 2,
  DELTA_COMBINE_MIN = 3,
};

/* In place over `count` elements of kind `elem` (DELTA_ELEM_*):
   allreduce combines every process's array elementwise; exscan_sum
   leaves on each process the sum of the arrays of the processes before
   it (zeros on the first). */
void delta_shard_allreduce(int32_t elem, int32_t combine, void* data,
                           int64_t count);
void delta_shard_exscan_sum(int32_t elem, void* data, int64_t count);

/* Gathers an array sharded along one axis onto the root (delta_shard_is_root):
   each process passes its block of shape [outer, extent, inner] (elements of
   `elem_bytes` bytes, row-major, extent = delta_shard_extent(global));
   the root receives [outer, global, inner] into `whole` (ignored
   elsewhere). Every process must call it. */
void delta_shard_gather(int64_t elem_bytes, const void* block, int64_t outer,
                        int64_t global, int64_t inner, void* whole);

/* print, read_npy and write_npy of an array with a sharded dim: the
   arguments of delta_print_value, delta_read_npy and delta_write_npy
   (runtime.h, npy.h) with `sizes` of this process's block, plus the
   position of the sharded dim among the array's dims and its global size.
   print and write_npy gather the array onto the root, which prints or
   writes it whole; read_npy reads this process's block of the file.
   Every write_npy of a sharded program goes through
   delta_shard_write_npy (sharded_dim = -1 for an array without the
   sharded dim): the root writes, and every process returns once the file
   is written. */
void delta_shard_print_value(int32_t kind, const void* data, int64_t rank,
                             const int64_t* sizes, const char* const* names,
                             int64_t sharded_dim, int64_t global);
void delta_shard_read_npy(const char* file, int32_t line, int32_t column,
                          const char* path, int32_t kind, int64_t rank,
                          const int64_t* sizes, const char* const* names,
                          const int64_t* file_axes, int64_t sharded_dim,
                          int64_t global, void* out);
void delta_shard_write_npy(const char* file, int32_t line, int32_t column,
                           const char* path, int32_t kind, const void* data,
                           int64_t rank, const int64_t* sizes,
                           const int64_t* file_axes, int64_t sharded_dim,
                           int64_t global);

/* Returns when every process has called it. */
void delta_shard_barrier(void);

/* Stops every process with exit status `status` when this one runs with
   others (MPI_Abort); returns otherwise. Called after a run-time error has
   been reported, so that no process waits forever in a collective. */
void delta_shard_abort(int32_t status);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_DISTRIBUTED_H_ */
