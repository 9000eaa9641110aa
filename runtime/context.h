/* The runtime half of the C ABI of `dlc build --lib`: contexts, status codes,
   and one generic entry routine that checks, converts and guards the calls
   that the generated wrappers describe with DeltaAbiEntry tables. See
   docs/internals/c_abi.md. Plain C so that generated code can call it. */
#ifndef DELTA_RUNTIME_CONTEXT_H_
#define DELTA_RUNTIME_CONTEXT_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The status of every library entry; the generated header repeats these
   values as NAME_OK, NAME_ERROR_SIZE, ... */
enum {
  DELTA_STATUS_OK = 0,
  DELTA_STATUS_ERROR_NULL = 1,     /* a null context, argument or buffer */
  DELTA_STATUS_ERROR_SIZE = 2,     /* a dim's size disagrees */
  DELTA_STATUS_ERROR_ARGUMENT = 3, /* a bad value: index, dtype, device */
  DELTA_STATUS_ERROR_RUNTIME = 4,  /* a run-time error of the Delta code */
  DELTA_STATUS_ERROR_OOM = 5,      /* out of memory */
};

typedef struct DeltaContext DeltaContext;

/* `options` points at the generated NAME_options ({int32_t num_threads})
   or is null. Returns null only when out of memory. */
DeltaContext* delta_context_create(const void* options);
void delta_context_destroy(DeltaContext* context);
/* Whether the context's plain entries take device pointers (see Note
   [Device memory at the boundary] in docs/internals/c_abi.md). */
int32_t delta_context_set_device_memory(DeltaContext* context,
                                        int32_t device_memory);
/* Runs the library's sharded dims on the MPI communicator whose Fortran
   handle is `fortran_comm` (MPI_Comm_c2f), for every context of the
   process (docs/distributed.md). */
int32_t delta_context_set_mpi_comm(DeltaContext* context, int64_t fortran_comm);
/* The block of the sharded dim (of `global` positions) that this process
   holds: the global position of its first element and its size. */
int32_t delta_context_shard_block(const DeltaContext* context, int64_t global,
                                  int64_t* offset, int64_t* extent);
/* The message of the last failed call on `context` ("" after success);
   valid until the next call on the context. */
const char* delta_context_last_error(const DeltaContext* context);
const char* delta_status_string(int32_t status);

/* One dim of a leaf, as the exported signature writes it: a size parameter
   of the function (size_param >= 0), a constant, or the sharded dim
   (size_param = DELTA_ABI_SHARDED, constant: its global size), whose size
   at the boundary is this process's block. */
enum { DELTA_ABI_SHARDED = -2 };
typedef struct DeltaAbiDim {
  const char* name;
  int64_t size_param;
  int64_t constant;
} DeltaAbiDim;

/* One array or scalar leaf of a parameter or result. Plain entries find it
   in the argument slots at `slot` (data pointer or scalar value, then the
   `rank` sizes), or, with offset >= 0, inside the C struct whose pointer is
   at `slot` (data pointer, then sizes; a scalar value). DLPack entries find
   a DLTensor* (arrays) or the value (scalars) at `dl_slot`. For results
   the slot holds where to write. */
typedef struct DeltaAbiLeaf {
  const char* name; /* for messages: "x", "p.l1.w", "result" */
  int64_t elem;     /* DELTA_ELEM_* */
  int64_t rank;
  const DeltaAbiDim* dims; /* rank entries, written order */
  /* canonical_order[k]: the written position of the k-th dim of the
     internal (canonical, row-major) layout. */
  const int64_t* canonical_order;
  DeltaAbiDim index_dim; /* DELTA_ELEM_INDEX: the dim it indexes */
  int64_t slot;
  int64_t offset;
  int64_t dl_slot;
} DeltaAbiLeaf;

/* A size parameter; explicit ones (that no parameter's dims mention) are
   passed as an int64_t in slot `slot` of both entries, else slot is -1. */
typedef struct DeltaAbiSizeParam {
  const char* name;
  int64_t slot;
} DeltaAbiSizeParam;

/* Runs the Delta function: sizes[i] is size parameter i; params[j] holds
   leaf j (a canonical array pointer, or a scalar value in its first bytes);
   the body writes results[k] likewise (arrays from delta_abi_alloc). */
typedef void (*DeltaAbiBody)(const int64_t* sizes, const uint64_t* params,
                             uint64_t* results);

/* The device side of an entry of a library built with --target=cuda
   (runtime/cuda.h's session functions): the context creates a session on
   its first such call and destroys it with itself; each call enters it
   (under the error guard: no device is a run-time error), makes its result
   arrays' host copies current and synchronizes (under the guard too), and
   leaves it afterwards, error or not. See Note [Device sessions] in
   docs/internals/c_abi.md. */
typedef struct DeltaAbiDevice {
  void* (*create)(void* (*alloc)(int64_t), void (*release)(void*));
  void (*destroy)(void* session);
  void (*enter)(void* session);
  void (*to_host)(void* host, int64_t bytes);
  void (*synchronize)(void);
  void (*leave)(void* session, int32_t failed);
  /* Inputs and results in the caller's device memory (DLPack kDLCUDA
     tensors, or plain entries of a context created with device_memory):
     see Note [Device memory at the boundary] in docs/internals/c_abi.md. */
  void* (*adopt)(void* device_pointer, int64_t bytes);
  void (*to_device)(void* host, int64_t bytes, void* device_pointer);
  void (*copy_to_host)(void* host, const void* device_pointer, int64_t bytes);
  void* (*alloc)(int64_t bytes);
  void* (*device_of)(void* host, int64_t bytes);
  int32_t (*transpose)(int32_t elem_bytes, int64_t rows, int64_t cols,
                       const void* source, void* destination);
  void (*result_buffers)(int64_t count, void* const* buffers,
                         const int64_t* bytes);
} DeltaAbiDevice;

typedef struct DeltaAbiEntry {
  const char* name; /* the C entry, for messages */
  int64_t num_size_params;
  const DeltaAbiSizeParam* size_params;
  int64_t num_params;
  const DeltaAbiLeaf* params;
  int64_t num_results;
  const DeltaAbiLeaf* results;
  DeltaAbiBody body;
  const DeltaAbiDevice* device; /* null: the entry runs on the CPU only */
} DeltaAbiEntry;

/* The whole entry: checks every pointer and size, converts inputs to the
   internal layout where they differ, runs the body with run-time errors
   caught (setjmp at this frame, longjmp from delta_fail's handler, every
   buffer allocated since freed), and writes the results. `args` are the
   slots of the plain (dlpack == 0) or DLPack entry. */
int32_t delta_abi_invoke(DeltaContext* context, const DeltaAbiEntry* entry,
                         const uint64_t* args, int32_t dlpack);

/* The sizes of the result leaves for the size parameters in `sizes`
   (explicit or not, in declaration order): each result array's dims in
   written order, one after the other. Returns DELTA_STATUS_ERROR_SIZE
   (sizes still written) when a result would have more than
   DELTA_MAX_ELEMENTS elements (format.h). */
int32_t delta_abi_result_sizes(const DeltaAbiEntry* entry, const int64_t* sizes,
                               int64_t* result_sizes);

/* The allocator of generated library code (delta_alloc/delta_free renamed):
   buffers are linked into the running entry's list, so that an error can
   free what the unwound frames owned. */
void* delta_abi_alloc(int64_t bytes);
void delta_abi_free(void* pointer);
/* Result `index` of the running entry: the caller's buffer for it when the
   call offered one of `bytes` bytes (once), else delta_abi_alloc(bytes).
   delta_abi_free leaves such a buffer alone. Note [Results in the caller's
   buffers] in docs/internals/c_abi.md. */
void* delta_abi_alloc_result(int64_t index, int64_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_CONTEXT_H_ */
