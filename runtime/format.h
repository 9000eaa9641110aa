// The printing of values (language contract §7), shared by the interpreter
// and compiled code: C linkage, no allocation besides a growable buffer.
#ifndef DELTA_RUNTIME_FORMAT_H
#define DELTA_RUNTIME_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Element kinds, numbered as delta::ir::ElemKind. In memory an f32 is a
// float, f64 a double, i32 an int32_t, i64 and index an int64_t (an index
// is its position), bool one byte holding 0 or 1.
enum {
  DELTA_ELEM_F32 = 0,
  DELTA_ELEM_F64 = 1,
  DELTA_ELEM_I32 = 2,
  DELTA_ELEM_I64 = 3,
  DELTA_ELEM_BOOL = 4,
  DELTA_ELEM_INDEX = 5,
};

// The most elements one array may have: 2^40 (8 TiB of f64). Every
// product of dim sizes is checked against it where it is formed (generated
// code, the interpreter, the .npy reader and writer, the C ABI), so byte
// counts and offsets never overflow an int64 (docs/language/types.md).
#define DELTA_MAX_ELEMENTS (INT64_C(1) << 40)
#define DELTA_MAX_ELEMENTS_TEXT "2^40"

// Sets *count to the product of the `rank` sizes and returns 0, or returns
// -1 when a size is negative or the product exceeds DELTA_MAX_ELEMENTS (a
// zero size makes the product 0, whatever the others).
int delta_element_count(int64_t rank, const int64_t* sizes, int64_t* count);

// The bytes of one element of kind `elem` (DELTA_ELEM_*) in memory: 4, 8,
// or 1 for a bool.
int64_t delta_elem_bytes(int32_t elem);

// A growable text buffer; zero-initialize it, free it with
// delta_buffer_free. `data` is NUL-terminated whenever size > 0. After an
// allocation failure `failed` is set and further appends do nothing.
typedef struct DeltaBuffer {
  char* data;
  size_t size;
  size_t capacity;
  int failed;
} DeltaBuffer;

void delta_buffer_append(DeltaBuffer* buffer, const char* text, size_t length);
void delta_buffer_free(DeltaBuffer* buffer);

// Appends one element of `elem_kind` read from `value`.
void delta_format_scalar(DeltaBuffer* buffer, int elem_kind, const void* value);

// Appends a dense row-major array as `[a=2, b=3] [[1, 2, 3], [4, 5, 6]]`:
// `shape` and `dim_names` list the dims in canonical order, the last dim
// varying fastest. With rank 0 it appends the scalar alone. Returns 0, or
// -1 (appending nothing) when delta_element_count rejects the shape.
int delta_format_array(DeltaBuffer* buffer, int elem_kind, const void* data,
                       int64_t rank, const int64_t* shape,
                       const char* const* dim_names);
// The same, showing only the first and last `edge_items` entries of each
// dim longer than twice that (all of them when `edge_items` < 0).
int delta_format_array_edges(DeltaBuffer* buffer, int elem_kind,
                             const void* data, int64_t rank,
                             const int64_t* shape, const char* const* dim_names,
                             int64_t edge_items);
// What `print` writes (docs/language/io.md, "Printing"): an array of more
// than DELTA_PRINT_THRESHOLD elements (default 1000; 0 prints every array
// whole) shows 3 entries at each end of each dim.
int delta_format_for_print(DeltaBuffer* buffer, int elem_kind, const void* data,
                           int64_t rank, const int64_t* shape,
                           const char* const* dim_names);

#ifdef __cplusplus
}  // extern "C"

#include <string>

namespace delta::runtime {

// The language's name of an element kind: "f32", ..., "bool"; any other
// kind is an index ("index (int64)").
const char* ElemName(int64_t elem);

// The source line of a run-time error and a caret under its column, as the
// compiler's diagnostics show them ("" when the file cannot be read, e.g. a
// built executable run where its source is not).
std::string SourceExcerpt(const char* file, int line, int column);

// delta_format_array (or, `for_print`, delta_format_for_print) into a
// std::string (empty when the shape is invalid).
std::string FormatArray(int elem_kind, const void* data, int64_t rank,
                        const int64_t* shape, const char* const* dim_names,
                        bool for_print = false);

}  // namespace delta::runtime
#endif

#endif  // DELTA_RUNTIME_FORMAT_H
