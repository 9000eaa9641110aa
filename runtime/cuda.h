/* The CUDA side of the runtime: the driver API found at run time with
   dlopen("libcuda.so.1"), kernel modules (PTX text embedded in the host
   code), launches and device memory for code built with --target=cuda.
   Nothing here needs CUDA to build, link or load; without a driver or a
   GPU the first call fails with `error: no CUDA device: …` (exit 1). See
   docs/gpu.md. */
#ifndef DELTA_RUNTIME_CUDA_H_
#define DELTA_RUNTIME_CUDA_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a failed check in a kernel reports, indexed by the code the kernel
   leaves in the error slot (code k is entry k - 1). `formatted` says
   whether `message` takes the two integers the kernel stored. */
typedef struct DeltaCudaCheck {
  const char* file; /* null: no source location */
  int32_t line;
  int32_t column;
  const char* message;
  int32_t formatted;
} DeltaCudaCheck;

/* Loads the driver, picks device 0 and its primary context; a run-time
   error if there is none. Idempotent. */
void delta_cuda_init(void);

/* The kernel `name` of the PTX module `ptx`, cached in *slot (a global of
   the host code, null at first). `checks` is the module's table of device
   checks (`check_count` entries), used by delta_cuda_check. */
void* delta_cuda_function(void** slot, const char* ptx, const char* name,
                          const DeltaCudaCheck* checks, int64_t check_count);

/* Launches `function` on a grid_x × grid_y grid of block_x × block_y
   threads; `args` points at each kernel parameter (cuLaunchKernel's
   kernelParams). Asynchronous. */
void delta_cuda_launch(void* function, int64_t grid_x, int64_t grid_y,
                       int64_t block_x, int64_t block_y, int64_t shared_bytes,
                       void** args);

/* How many blocks of 256 threads the device runs at once (multiprocessors
   times the threads a multiprocessor holds, over 256): the grid of a
   grid-stride kernel (Note [Launch geometry] in docs/gpu.md). */
int64_t delta_cuda_resident_blocks(void);

/* The device's error slot (four i64: code, first, second, unused) that
   kernels write when a check fails; zero while all is well. */
void* delta_cuda_error_slot(void);

/* Waits for the device and reports a failed kernel check (delta_fail) or
   a driver error. */
void delta_cuda_check(void);

/* Arrays with a device copy. Host code keeps using host pointers as the
   arrays' identity (so the CPU code generator's ownership rules apply
   unchanged); the runtime maps each to its device buffer and knows which
   copy is current. Arrays are never written after they are made, so a copy
   stays valid once made. */

/* A fresh array of `bytes` whose contents will be written on the device
   (the host copy is stale until delta_cuda_host). */
void* delta_cuda_alloc(int64_t bytes);
/* The device address of the array `host`, copying it to the device first if
   the device has no copy yet. */
void* delta_cuda_device(void* host, int64_t bytes);
/* Makes the host copy of `host` current (a device-to-host copy if the
   array was made on the device and not read on the host yet). */
void delta_cuda_host(void* host, int64_t bytes);
/* A new array equal to `host` (device-to-device when it lives there). */
void* delta_cuda_clone(void* host, int64_t bytes);
/* Frees the array and its device copy. */
void delta_cuda_free(void* host);

/* A contraction through cuBLAS (loaded with dlopen on first use), on the
   session's stream: out[p, q] = sum over k of x[p, k] * y[k, q], with out
   row-major (p × q), x stored [p][k] when `x_k_inner` (else [k][p]) and y
   stored [k][q] when `y_k_outer` (else [q][k]); `batch` such products whose
   operands and results are `x_stride`, `y_stride`, `out_stride` elements
   apart. `elem_bytes` is 4 (f32) or 8 (f64). Returns 1 when cuBLAS ran it,
   0 when cuBLAS is absent (the caller then launches the tiled kernel); a
   cuBLAS failure is a run-time error. TF32 tensor cores are used for f32
   only with DELTA_CUDA_TF32=1. */
int32_t delta_cuda_gemm(int32_t elem_bytes, int64_t p, int64_t q, int64_t k,
                        const void* x, int32_t x_k_inner, const void* y,
                        int32_t y_k_outer, void* out, int64_t batch,
                        int64_t x_stride, int64_t y_stride, int64_t out_stride);

/* Transposes a row-major rows × cols matrix of 4- or 8-byte elements in
   device memory into `destination` (cols × rows) with cuBLAS's geam on the
   session's stream. Returns 0 when cuBLAS is absent. */
int32_t delta_cuda_transpose(int32_t elem_bytes, int64_t rows, int64_t cols,
                             const void* source, void* destination);

/* Like delta_cuda_alloc, for an array that an exported function returns as
   its result `index`: when the running library call registered the
   caller's device buffer for that result (delta_cuda_result_buffers) and
   its size matches, the array is that buffer, so that the kernel writes the
   result where the caller wants it. Each buffer serves one array. */
void* delta_cuda_alloc_result(int64_t index, int64_t bytes);
/* The caller's device buffers of a library call's results (null: none),
   which alias no input and no other result; forgotten when the call ends. */
void delta_cuda_result_buffers(int64_t count, void* const* buffers,
                               const int64_t* bytes);

/* The caller's device memory as an array of the current session (a library
   input in device memory): a host handle whose device copy is
   `device_pointer`, which the session never frees. */
void* delta_cuda_adopt(void* device_pointer, int64_t bytes);
/* Writes the array `host` into the caller's device memory (a library result
   in device memory): device-to-device when it lives on the device. */
void delta_cuda_to_device(void* host, int64_t bytes, void* device_pointer);
/* Copies `bytes` of device memory to the host and waits for it. */
void delta_cuda_copy_to_host(void* host, const void* device_pointer,
                             int64_t bytes);

/* Sessions: what one user of the device owns (its modules, error slot and
   arrays' device copies). Executables use one session for the process; a
   library built with --target=cuda gives each context its own, through the
   DeltaAbiDevice table of its entries (runtime/context.h). See Note
   [Device sessions] in docs/internals/c_abi.md. */

/* A new session whose host buffers come from `alloc`/`release` (the
   library's tracked allocator). No driver call; null when out of memory. */
void* delta_cuda_session_create(void* (*alloc)(int64_t),
                                void (*release)(void*));
/* Sessions own a stream (every launch, copy and allocation of the session
   is ordered on it) and a memory pool (cuMemAllocFromPoolAsync; freed
   memory stays in the pool for the next allocation). */
/* Unloads the session's modules and frees its device memory. Never fails. */
void delta_cuda_session_destroy(void* session);
/* Makes `session` the calling thread's session and initializes the device:
   a run-time error (`no CUDA device: …`) if there is none. */
void delta_cuda_session_enter(void* session);
/* Ends a call: waits for the device, frees the device copy of every array
   the call used (inputs, intermediates, results), clears a failed check
   when `failed`, and makes the process's session current again. Never
   fails. */
void delta_cuda_session_leave(void* session, int32_t failed);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_CUDA_H_ */
