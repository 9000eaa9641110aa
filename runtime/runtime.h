/* The C ABI between generated code and the Delta runtime: allocation, run-time
   errors, printing and the thread pool. Plain C so that generated headers and
   embedders can include it. */
#ifndef DELTA_RUNTIME_RUNTIME_H_
#define DELTA_RUNTIME_RUNTIME_H_

#include <stdint.h>

#include "runtime/format.h" /* DELTA_ELEM_*: the element kinds */

#ifdef __cplusplus
extern "C" {
#endif

/* Every array buffer: 64-byte aligned (a cache line, an AVX-512 vector).
   delta_alloc(0) returns a valid pointer that delta_free accepts. Out of
   memory is a run-time error. */
void* delta_alloc(int64_t bytes);
void delta_free(void* pointer);
/* delta_alloc that returns null instead of failing (the C ABI's tracked
   allocator reports out of memory with its own status). */
void* delta_try_alloc(int64_t bytes);

/* Run-time errors. delta_fail reports `file:line:col: error: message` (or
   `error: message` when `file` is null: no source location) and
   does not return. By default it flushes stdout, writes the message to
   stderr and exits with status 1 (executables, `dlc run`). A handler set
   with delta_set_fail_handler (per thread) is called instead, so that an
   embedding context can record the error and unwind (it must not return;
   if it does, the process aborts). See docs/internals/codegen.md. */
typedef void (*DeltaFailHandler)(void* user, const char* file, int line,
                                 int column, const char* message);
void delta_set_fail_handler(DeltaFailHandler handler, void* user);
/* The calling thread's handler and its user pointer (null: the default). */
void delta_get_fail_handler(DeltaFailHandler* handler, void** user);
/* The source location of the op the calling thread runs, for the run-time
   errors that the runtime raises itself (out of memory, a GPU driver
   error): delta_fail with a null `file` reports this location. Generated
   code sets it before each op that allocates an array or prints, and
   before a failed check of an op inlined from other functions. `chain`
   (may be null) is the chain of calls that led there, one line each
   ("  in f at a.dl:3:9\n  called from main at a.dl:7:3\n"), printed after
   an error at this very location. */
void delta_set_location(const char* file, int32_t line, int32_t column,
                        const char* chain);
/* Where calls are not inlined (-O0), generated code brackets each call of a
   Delta function with these, so that a run-time error shows the chain of
   calls still running: `callee` is the called function's name, `call_site`
   its line of the chain ("  called from main at a.dl:7:3\n"). Both are
   static strings. */
void delta_enter_call(const char* callee, const char* call_site);
void delta_leave_call(void);
/* How many calls are running on this thread, and a reset to an earlier
   count: a guard that catches a failure (runtime/context.cpp) restores it,
   since the failed calls never return. */
int32_t delta_call_depth(void);
void delta_set_call_depth(int32_t depth);
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
void delta_fail(const char* file, int line, int column, const char* message);

/* delta_fail with a message formatted from `format` (printf, two `%lld`
   at most) and two integers: the index and size of a failed check. */
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
void delta_fail_format(const char* file, int line, int column,
                       const char* format, int64_t first, int64_t second);

/* Printing (language.md section 7). One `print` is delta_print_begin, one
   call per argument, delta_print_end; the line is written at the end in one
   piece, arguments separated by single spaces. Scalars are passed as
   arrays of rank 0. `sizes` and `names` hold `rank` entries, dims in
   canonical order; `data` is dense row-major; `kind` is a DELTA_ELEM_*
   of format.h. */
void delta_print_begin(void);
void delta_print_text(const char* text);
void delta_print_value(int32_t kind, const void* data, int64_t rank,
                       const int64_t* sizes, const char* const* names);
void delta_print_end(void);

/* Flushes what the program printed; called at the end of `main`. */
void delta_flush(void);

/* Runs body(ctx, begin, end) over [0, n) split into chunks, on the thread
   pool; returns when every chunk is done. Calls from inside a body run
   inline (no nested parallelism). The pool has DELTA_NUM_THREADS threads
   (default: the number of cores), started on first use. A run-time error
   in a body stops the loop: the other chunks finish or are skipped, then
   the error is reported on the calling thread (through its fail handler). */
typedef void (*DeltaParallelBody)(void* ctx, int64_t begin, int64_t end);
void delta_parallel_for(int64_t n, DeltaParallelBody body, void* ctx);
int32_t delta_num_threads(void);
/* Per thread: nonzero makes this thread's delta_parallel_for calls run their
   loops inline (an embedding context created with num_threads = 1). */
void delta_set_serial(int32_t serial);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_RUNTIME_H_ */
