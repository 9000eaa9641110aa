/* The command line of a program whose `main` has parameters
   (docs/language/io.md): one parser shared by executables from `dlc build`,
   `dlc run` (JIT) and `dlc run --interp`. Plain C entry points, like
   runtime.h. */
#ifndef DELTA_RUNTIME_ARGS_H_
#define DELTA_RUNTIME_ARGS_H_

#include <stdint.h>

#include "runtime/format.h" /* DELTA_ELEM_*: the element kinds */

#ifdef __cplusplus
extern "C" {
#endif

/* The kind of a `path` parameter; the others are DELTA_ELEM_F32 … _BOOL. */
enum { DELTA_ARG_PATH = 100 };

/* Parses the program's arguments argv[1..argc) against `main`'s `count`
   parameters, named `names` and of kinds `kinds`. Each value goes to its
   8-byte slot of `slots`: an i32 as int32_t, an i64 as int64_t, an f32 as
   float, an f64 as double, a bool as one byte 0 or 1, a path as its
   `const char*` (argv's own string, also returned later by
   delta_path_arg). Returns 0; or, on a wrong count or a value that does
   not parse, writes an error and a usage line naming each parameter with
   its type to stderr (`usage: NAME data:path lr:f32`, NAME argv[0]'s last
   path component) and returns 1. */
int32_t delta_parse_args(int32_t argc, const char* const* argv, int64_t count,
                         const char* const* names, const int32_t* kinds,
                         uint64_t* slots);

/* The text of `main`'s parameter number `index` (a path) from the last
   successful delta_parse_args. */
const char* delta_path_arg(int64_t index);

/* After delta_parse_args, the sizes `main` takes from files
   (`dim n = npy_extent(data, 0);`): sizes[i] is the extent of axis axes[i]
   of the .npy file named by main's path parameter path_params[i]. Returns
   0; or, when a file cannot be read or has no such axis, writes an error
   located at the npy_extent (`file:lines[i]:columns[i]: error: …`) to
   stderr and returns 1. */
int32_t delta_npy_extents(int64_t count, const int64_t* path_params,
                          const int64_t* axes, const char* file,
                          const int32_t* lines, const int32_t* columns,
                          int64_t* sizes);

#ifdef __cplusplus
}
#endif

#endif /* DELTA_RUNTIME_ARGS_H_ */
