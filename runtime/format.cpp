// The §7 printing of scalars and arrays, written without exceptions or
// global state so that compiled code can call it from any thread.
#include "runtime/format.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>

namespace {

void AppendString(DeltaBuffer* buffer, const char* text) {
  delta_buffer_append(buffer, text, std::strlen(text));
}

// std::to_chars gives the shortest text that reads back to the same value
// of the argument's type, which is what §7 asks for; only NaN needs care,
// since it would print its sign bit as "-nan".
template <typename Float>
void AppendFloat(DeltaBuffer* buffer, Float value) {
  if (std::isnan(value)) return AppendString(buffer, "nan");
  char text[64];
  auto result = std::to_chars(text, text + sizeof text, value);
  delta_buffer_append(buffer, text, static_cast<size_t>(result.ptr - text));
}

void AppendInteger(DeltaBuffer* buffer, int64_t value) {
  char text[32];
  auto result = std::to_chars(text, text + sizeof text, value);
  delta_buffer_append(buffer, text, static_cast<size_t>(result.ptr - text));
}

// Appends the elements of the dims from `level` on, advancing `element`.
// The elements at `offset` of dims `level` and after; with `edge` >= 0, a
// dim longer than 2 * edge shows its first and last `edge` entries around
// "...", as NumPy does.
void AppendNested(DeltaBuffer* buffer, int elem_kind, const char* data,
                  int64_t rank, const int64_t* shape, int64_t level,
                  int64_t offset, int64_t edge) {
  if (level == rank) {
    delta_format_scalar(buffer, elem_kind,
                        data + offset * delta_elem_bytes(elem_kind));
    return;
  }
  int64_t stride = 1;
  for (int64_t d = level + 1; d < rank; ++d) stride *= shape[d];
  bool elide = edge >= 0 && shape[level] > 2 * edge;
  AppendString(buffer, "[");
  for (int64_t i = 0; i < shape[level]; ++i) {
    if (elide && i == edge) {
      AppendString(buffer, ", ...");
      i = shape[level] - edge - 1;
      continue;
    }
    if (i > 0) AppendString(buffer, ", ");
    AppendNested(buffer, elem_kind, data, rank, shape, level + 1,
                 offset + i * stride, edge);
  }
  AppendString(buffer, "]");
}

// What `print` shows whole: arrays of more elements are summarized.
int64_t PrintThreshold() {
  const char* text = std::getenv("DELTA_PRINT_THRESHOLD");
  if (!text || !*text) return 1000;
  char* end = nullptr;
  long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || value <= 0) return INT64_MAX;  // 0: never summarize
  return value;
}

}  // namespace

extern "C" {

int64_t delta_elem_bytes(int32_t elem) {
  switch (elem) {
    case DELTA_ELEM_F32:
    case DELTA_ELEM_I32:
      return 4;
    case DELTA_ELEM_BOOL:
      return 1;
    default:
      return 8;
  }
}

int delta_element_count(int64_t rank, const int64_t* sizes, int64_t* count) {
  if (rank < 0) return -1;
  bool empty = false;
  for (int64_t i = 0; i < rank; ++i) {
    if (sizes[i] < 0) return -1;
    empty |= sizes[i] == 0;
  }
  int64_t product = 1;
  for (int64_t i = 0; i < rank && !empty; ++i) {
    // product <= the limit < 2^62, so the comparison cannot overflow.
    if (sizes[i] > DELTA_MAX_ELEMENTS / product) return -1;
    product *= sizes[i];
  }
  *count = empty ? 0 : product;
  return 0;
}

void delta_buffer_append(DeltaBuffer* buffer, const char* text, size_t length) {
  if (buffer->failed) return;
  const size_t limit = std::numeric_limits<size_t>::max() / 4;
  if (length > limit || buffer->size > limit - length) {
    buffer->failed = 1;
    return;
  }
  size_t needed = buffer->size + length + 1;  // + the terminating NUL
  if (needed > buffer->capacity) {
    size_t capacity = buffer->capacity < 64 ? 64 : buffer->capacity;
    while (capacity < needed) capacity *= 2;
    char* data = static_cast<char*>(std::realloc(buffer->data, capacity));
    if (!data) {
      buffer->failed = 1;
      return;
    }
    buffer->data = data;
    buffer->capacity = capacity;
  }
  if (length > 0) std::memcpy(buffer->data + buffer->size, text, length);
  buffer->size += length;
  buffer->data[buffer->size] = '\0';
}

void delta_buffer_free(DeltaBuffer* buffer) {
  std::free(buffer->data);
  *buffer = DeltaBuffer{};
}

void delta_format_scalar(DeltaBuffer* buffer, int elem_kind,
                         const void* value) {
  // memcpy, because compiled code may hand us unaligned pointers.
  switch (elem_kind) {
    case DELTA_ELEM_F32: {
      float x;
      std::memcpy(&x, value, sizeof x);
      return AppendFloat(buffer, x);
    }
    case DELTA_ELEM_F64: {
      double x;
      std::memcpy(&x, value, sizeof x);
      return AppendFloat(buffer, x);
    }
    case DELTA_ELEM_I32: {
      int32_t x;
      std::memcpy(&x, value, sizeof x);
      return AppendInteger(buffer, x);
    }
    case DELTA_ELEM_BOOL: {
      unsigned char x;
      std::memcpy(&x, value, sizeof x);
      return AppendString(buffer, x ? "true" : "false");
    }
    case DELTA_ELEM_I64:
    case DELTA_ELEM_INDEX: {
      int64_t x;
      std::memcpy(&x, value, sizeof x);
      return AppendInteger(buffer, x);
    }
    default:
      return AppendString(buffer, "?");
  }
}

int delta_format_array_edges(DeltaBuffer* buffer, int elem_kind,
                             const void* data, int64_t rank,
                             const int64_t* shape, const char* const* dim_names,
                             int64_t edge_items) {
  int64_t count = 0;
  if (delta_element_count(rank, shape, &count) != 0) return -1;
  if (rank == 0) {
    delta_format_scalar(buffer, elem_kind, data);
    return 0;
  }
  AppendString(buffer, "[");
  for (int64_t i = 0; i < rank; ++i) {
    if (i > 0) AppendString(buffer, ", ");
    AppendString(buffer, dim_names[i]);
    AppendString(buffer, "=");
    AppendInteger(buffer, shape[i]);
  }
  AppendString(buffer, "] ");
  AppendNested(buffer, elem_kind, static_cast<const char*>(data), rank, shape,
               0, 0, edge_items);
  return 0;
}

int delta_format_array(DeltaBuffer* buffer, int elem_kind, const void* data,
                       int64_t rank, const int64_t* shape,
                       const char* const* dim_names) {
  return delta_format_array_edges(buffer, elem_kind, data, rank, shape,
                                  dim_names, -1);
}

int delta_format_for_print(DeltaBuffer* buffer, int elem_kind, const void* data,
                           int64_t rank, const int64_t* shape,
                           const char* const* dim_names) {
  int64_t count = 0;
  if (delta_element_count(rank, shape, &count) != 0) return -1;
  return delta_format_array_edges(buffer, elem_kind, data, rank, shape,
                                  dim_names, count > PrintThreshold() ? 3 : -1);
}

}  // extern "C"

namespace delta::runtime {

const char* ElemName(int64_t elem) {
  switch (elem) {
    case DELTA_ELEM_F32:
      return "f32";
    case DELTA_ELEM_F64:
      return "f64";
    case DELTA_ELEM_I32:
      return "i32";
    case DELTA_ELEM_I64:
      return "i64";
    case DELTA_ELEM_BOOL:
      return "bool";
    default:
      return "index (int64)";
  }
}

std::string FormatArray(int elem_kind, const void* data, int64_t rank,
                        const int64_t* shape, const char* const* dim_names,
                        bool for_print) {
  DeltaBuffer buffer{};
  std::string text;
  auto format = for_print ? delta_format_for_print : delta_format_array;
  if (format(&buffer, elem_kind, data, rank, shape, dim_names) == 0 &&
      !buffer.failed && buffer.size > 0)
    text.assign(buffer.data, buffer.size);
  delta_buffer_free(&buffer);
  return text;
}

std::string SourceExcerpt(const char* file, int line, int column) {
  if (file == nullptr || line <= 0 || column <= 0) return "";
  std::FILE* source = std::fopen(file, "rb");
  if (source == nullptr) return "";
  std::string text;
  int current = 1;
  for (int c = std::fgetc(source); c != EOF; c = std::fgetc(source)) {
    if (c == '\n') {
      if (current == line) break;
      ++current;
    } else if (current == line) {
      text += static_cast<char>(c);
      if (text.size() > 4096) break;  // not a line of source
    }
  }
  std::fclose(source);
  if (current != line || static_cast<size_t>(column) > text.size() + 1)
    return "";
  // Tabs stay tabs so that the caret lines up.
  std::string caret;
  for (int i = 0; i + 1 < column; ++i) caret += text[i] == '\t' ? '\t' : ' ';
  return text + "\n" + caret + "^\n";
}

}  // namespace delta::runtime
