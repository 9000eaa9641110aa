/* Reading and writing NumPy .npy files: `read_npy` and `write_npy` of
   docs/language/io.md, shared by the interpreter and generated code. Plain C
   entry points, like runtime.h. */
#ifndef DELTA_RUNTIME_NPY_H_
#define DELTA_RUNTIME_NPY_H_

#include <stdint.h>

#include "runtime/format.h" /* DELTA_ELEM_*: the element kinds */

#ifdef __cplusplus
extern "C" {
#endif

/* An array in memory: dense row-major over `rank` dims whose sizes are
   `sizes` (memory order: the last dim varies fastest) and whose names, for
   messages, are `names`. File axis i is memory dim `file_axes[i]` (a
   permutation of 0..rank-1): the file's shape must be the sizes in that
   order. */

/* Reads `path` into `out` (elements of `kind`, converted from the file's
   dtype: little-endian or single-byte bool, integers and floats; C or
   Fortran order). Returns 0, or -1 with a NUL-terminated message in
   `error` (at most `error_size` bytes, stating the path) when the file
   cannot be read, is not a .npy file, or has another shape. */
int delta_npy_read(const char* path, int32_t kind, int64_t rank,
                   const int64_t* sizes, const char* const* names,
                   const int64_t* file_axes, void* out, char* error,
                   int64_t error_size);

/* delta_npy_read of one block of an array: the file holds the whole
   array, whose extent along memory dim `block_dim` is `block_global`;
   `out` receives the elements [block_offset, block_offset +
   sizes[block_dim]) along it (a process's block of a sharded dim). */
int delta_npy_read_block(const char* path, int32_t kind, int64_t rank,
                         const int64_t* sizes, const char* const* names,
                         const int64_t* file_axes, int64_t block_dim,
                         int64_t block_global, int64_t block_offset, void* out,
                         char* error, int64_t error_size);

/* Writes the array `data` (elements of `kind`) to `path` as a C-order .npy
   file (format 1.0) with axes in file order. Returns 0 or -1 with a
   message. */
int delta_npy_write(const char* path, int32_t kind, const void* data,
                    int64_t rank, const int64_t* sizes,
                    const int64_t* file_axes, char* error, int64_t error_size);

/* The shape of the .npy file `path`: its rank in `rank` and its first
   `max_rank` extents in `shape`. Returns 0, or -1 with a message as
   delta_npy_read does. */
int delta_npy_shape(const char* path, int64_t max_rank, int64_t* rank,
                    int64_t* shape, char* error, int64_t error_size);

/* For generated code: the same, reporting failure through delta_fail at
   the source location `file:line:column` of the read_npy or write_npy. */
void delta_read_npy(const char* file, int32_t line, int32_t column,
                    const char* path, int32_t kind, int64_t rank,
                    const int64_t* sizes, const char* const* names,
                    const int64_t* file_axes, void* out);
void delta_write_npy(const char* file, int32_t line, int32_t column,
                     const char* path, int32_t kind, const void* data,
                     int64_t rank, const int64_t* sizes,
                     const int64_t* file_axes);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_NPY_H_ */
