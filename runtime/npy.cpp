// NumPy .npy files (format 1.0 to 3.0): the header is a Python dict literal
// with 'descr', 'fortran_order' and 'shape'; the data follows, dense.
// https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
#include "runtime/npy.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "runtime/runtime.h"

namespace {

struct Failure {
  std::string message;
};

void SetError(char* error, int64_t error_size, const std::string& message) {
  if (error == nullptr || error_size <= 0) return;
  size_t n = std::min(message.size(), static_cast<size_t>(error_size - 1));
  std::memcpy(error, message.data(), n);
  error[n] = '\0';
}

// The element types a file may hold.
enum class FileKind { Float, Signed, Unsigned, Bool };
struct Dtype {
  FileKind kind = FileKind::Float;
  int bytes = 4;
};

bool ParseDescr(const std::string& descr, Dtype& dtype) {
  if (descr.size() < 3) return false;
  char order = descr[0];
  char code = descr[1];
  int bytes = std::atoi(descr.c_str() + 2);
  // Big-endian data is not read; one-byte types have no byte order.
  if (order == '>' && bytes != 1) return false;
  if (order != '<' && order != '|' && order != '=' && order != '>')
    return false;
  switch (code) {
    case 'f':
      dtype.kind = FileKind::Float;
      if (bytes != 4 && bytes != 8) return false;
      break;
    case 'i':
      dtype.kind = FileKind::Signed;
      if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return false;
      break;
    case 'u':
      dtype.kind = FileKind::Unsigned;
      if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return false;
      break;
    case 'b':
      dtype.kind = FileKind::Bool;
      if (bytes != 1) return false;
      break;
    default:
      return false;
  }
  dtype.bytes = bytes;
  return true;
}

// The text of the value of `key` in the header dict, up to the next
// top-level ',' or '}'.
bool HeaderValue(const std::string& header, const char* key,
                 std::string& value) {
  std::string quoted = std::string("'") + key + "'";
  size_t at = header.find(quoted);
  if (at == std::string::npos) return false;
  at = header.find(':', at + quoted.size());
  if (at == std::string::npos) return false;
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (depth == 0 && (c == ',' || c == '}')) break;
    if (depth < 0) break;
  }
  value = header.substr(at, end - at);
  size_t first = value.find_first_not_of(" ");
  size_t last = value.find_last_not_of(" ");
  value =
      first == std::string::npos ? "" : value.substr(first, last - first + 1);
  return true;
}

bool ParseShape(const std::string& text, std::vector<int64_t>& shape) {
  if (text.size() < 2 || text.front() != '(' || text.back() != ')')
    return false;
  std::string inner = text.substr(1, text.size() - 2);
  size_t at = 0;
  while (at < inner.size()) {
    while (at < inner.size() && (inner[at] == ' ' || inner[at] == ',')) ++at;
    if (at >= inner.size()) break;
    char* end = nullptr;
    long long size = std::strtoll(inner.c_str() + at, &end, 10);
    if (end == inner.c_str() + at || size < 0) return false;
    shape.push_back(size);
    at = static_cast<size_t>(end - inner.c_str());
    while (at < inner.size() && inner[at] == 'L') ++at;
  }
  return true;
}

std::string ShapeText(const std::vector<int64_t>& shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + (shape.size() == 1 ? ",)" : ")");
}

// Reads one file element as a double and as an integer.
void ReadElement(const unsigned char* p, const Dtype& dtype, double& as_float,
                 int64_t& as_int, bool& is_float) {
  is_float = dtype.kind == FileKind::Float;
  if (dtype.kind == FileKind::Float) {
    if (dtype.bytes == 4) {
      float f;
      std::memcpy(&f, p, 4);
      as_float = f;
    } else {
      std::memcpy(&as_float, p, 8);
    }
    return;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, p, static_cast<size_t>(dtype.bytes));  // little-endian
  if (dtype.kind == FileKind::Signed && dtype.bytes < 8) {
    uint64_t sign = uint64_t{1} << (8 * dtype.bytes - 1);
    if (bits & sign) bits |= ~((sign << 1) - 1);
  }
  as_int = dtype.kind == FileKind::Bool ? (bits != 0 ? 1 : 0)
                                        : static_cast<int64_t>(bits);
  as_float = dtype.kind == FileKind::Unsigned ? static_cast<double>(bits)
                                              : static_cast<double>(as_int);
}

// Float-to-integer conversion as the language does it: truncates,
// saturates, NaN is 0.
int64_t ToInt(double value, int64_t low, int64_t high) {
  if (value != value) return 0;
  if (value <= static_cast<double>(low)) return low;
  if (value >= static_cast<double>(high)) return high;
  return static_cast<int64_t>(value);
}

void StoreElement(void* out, int64_t i, int32_t kind, double as_float,
                  int64_t as_int, bool is_float) {
  switch (kind) {
    case DELTA_ELEM_F32:
      static_cast<float*>(out)[i] =
          is_float ? static_cast<float>(as_float) : static_cast<float>(as_int);
      break;
    case DELTA_ELEM_F64:
      static_cast<double*>(out)[i] =
          is_float ? as_float : static_cast<double>(as_int);
      break;
    case DELTA_ELEM_I32:
      static_cast<int32_t*>(out)[i] = static_cast<int32_t>(
          is_float ? ToInt(as_float, INT32_MIN, INT32_MAX) : as_int);
      break;
    case DELTA_ELEM_BOOL:
      static_cast<unsigned char*>(out)[i] =
          (is_float ? as_float != 0 : as_int != 0) ? 1 : 0;
      break;
    default:  // i64, index
      static_cast<int64_t*>(out)[i] =
          is_float ? ToInt(as_float, INT64_MIN, INT64_MAX) : as_int;
      break;
  }
}

const char* Descr(int32_t kind) {
  switch (kind) {
    case DELTA_ELEM_F32:
      return "<f4";
    case DELTA_ELEM_F64:
      return "<f8";
    case DELTA_ELEM_I32:
      return "<i4";
    case DELTA_ELEM_BOOL:
      return "|b1";
    default:
      return "<i8";
  }
}

// Visits every element of a dense row-major array over `sizes`, calling
// visit(memory position, offset) where offset = sum of index * strides.
template <typename Visit>
void ForEachElement(const std::vector<int64_t>& sizes,
                    const std::vector<int64_t>& strides, Visit visit) {
  size_t rank = sizes.size();
  int64_t count = 1;
  for (int64_t size : sizes) count *= size;
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  for (int64_t position = 0; position < count; ++position) {
    visit(position, offset);
    for (size_t d = rank; d-- > 0;) {
      ++index[d];
      offset += strides[d];
      if (index[d] < sizes[d]) break;
      offset -= strides[d] * index[d];
      index[d] = 0;
    }
  }
}

// A .npy file read into memory, its header parsed.
struct File {
  std::vector<unsigned char> bytes;
  Dtype dtype;
  bool fortran = false;
  std::vector<int64_t> shape;
  int64_t count = 0;  // elements
  size_t data_start = 0;
};

// Reads the file, or with `header_only` no more of it than its header.
File ReadFile(const char* path, bool header_only = false) {
  std::string where = std::string("cannot read '") + path + "': ";
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path, "rb"),
                                             &std::fclose);
  if (file == nullptr) throw Failure{where + std::strerror(errno)};
  File result;
  std::vector<unsigned char>& bytes = result.bytes;
  // Reads until `bytes` holds `size` bytes or the file ends.
  auto read_to = [&](size_t size) {
    unsigned char chunk[65536];
    while (bytes.size() < size) {
      size_t n = std::fread(
          chunk, 1, std::min(sizeof chunk, size - bytes.size()), file.get());
      if (n == 0) break;
      bytes.insert(bytes.end(), chunk, chunk + n);
    }
  };
  read_to(header_only ? 12 : SIZE_MAX);
  if (bytes.size() < 10 || std::memcmp(bytes.data(), "\x93NUMPY", 6) != 0)
    throw Failure{where + "not a .npy file"};
  int major = bytes[6];
  size_t header_length, header_start;
  if (major == 1) {
    header_length = bytes[8] | (size_t{bytes[9]} << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) throw Failure{where + "truncated header"};
    header_length = bytes[8] | (size_t{bytes[9]} << 8) |
                    (size_t{bytes[10]} << 16) | (size_t{bytes[11]} << 24);
    header_start = 12;
  } else {
    throw Failure{where + "unknown .npy format version " +
                  std::to_string(major)};
  }
  if (header_only) read_to(header_start + header_length);
  if (bytes.size() < header_start + header_length)
    throw Failure{where + "truncated header"};
  std::string header(bytes.begin() + header_start,
                     bytes.begin() + header_start + header_length);
  std::string descr_text, fortran_text, shape_text;
  if (!HeaderValue(header, "descr", descr_text) ||
      !HeaderValue(header, "fortran_order", fortran_text) ||
      !HeaderValue(header, "shape", shape_text))
    throw Failure{where + "bad header"};
  if (descr_text.size() < 2 ||
      (descr_text.front() != '\'' && descr_text.front() != '"'))
    throw Failure{where + "unsupported dtype " + descr_text};
  std::string descr = descr_text.substr(1, descr_text.size() - 2);
  Dtype& dtype = result.dtype;
  if (!ParseDescr(descr, dtype))
    throw Failure{where + "unsupported dtype '" + descr +
                  "' (little-endian bool, integers, f4 and f8 are read)"};
  result.fortran = fortran_text == "True";
  std::vector<int64_t>& shape = result.shape;
  if (!ParseShape(shape_text, shape)) throw Failure{where + "bad shape"};
  // Bounds the byte counts below (a crafted shape's product could wrap).
  if (delta_element_count(static_cast<int64_t>(shape.size()), shape.data(),
                          &result.count) != 0)
    throw Failure{where + "shape " + ShapeText(shape) + " has more than " +
                  DELTA_MAX_ELEMENTS_TEXT " elements"};

  result.data_start = header_start + header_length;
  return result;
}

// With block_dim >= 0, `out` is the block [block_offset, block_offset +
// sizes[block_dim]) along memory dim block_dim of an array whose whole
// extent there is block_global.
void Read(const char* path, int32_t kind, int64_t rank, const int64_t* sizes,
          const char* const* names, const int64_t* file_axes, void* out,
          int64_t block_dim = -1, int64_t block_global = 0,
          int64_t block_offset = 0) {
  std::string where = std::string("cannot read '") + path + "': ";
  File file = ReadFile(path);
  const std::vector<int64_t>& shape = file.shape;
  const Dtype& dtype = file.dtype;
  bool fortran = file.fortran;
  int64_t count = file.count;
  const std::vector<unsigned char>& bytes = file.bytes;
  std::vector<int64_t> expected(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i)
    expected[i] =
        file_axes[i] == block_dim ? block_global : sizes[file_axes[i]];
  if (shape != expected) {
    std::string want = "(";
    for (int64_t i = 0; i < rank; ++i) {
      if (i) want += ", ";
      want += std::string(names ? names[file_axes[i]] : "?") + "=" +
              std::to_string(expected[i]);
    }
    want += rank == 1 ? ",)" : ")";
    throw Failure{std::string("'") + path + "' has shape " + ShapeText(shape) +
                  ", expected " + want};
  }
  size_t data_start = file.data_start;
  if (bytes.size() < data_start + static_cast<size_t>(count) * dtype.bytes)
    throw Failure{where + "the file is shorter than its shape says"};
  // Strides of the file, in elements, per file axis.
  std::vector<int64_t> file_strides(static_cast<size_t>(rank));
  int64_t stride = 1;
  for (int64_t k = 0; k < rank; ++k) {
    int64_t axis = fortran ? k : rank - 1 - k;
    file_strides[axis] = stride;
    stride *= shape[axis];
  }
  // Per memory dim, its stride in the file.
  std::vector<int64_t> memory_sizes(sizes, sizes + rank);
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) strides[file_axes[i]] = file_strides[i];
  const unsigned char* data = bytes.data() + data_start;
  if (block_dim >= 0) data += block_offset * strides[block_dim] * dtype.bytes;
  ForEachElement(memory_sizes, strides, [&](int64_t position, int64_t offset) {
    double as_float = 0;
    int64_t as_int = 0;
    bool is_float = false;
    ReadElement(data + offset * dtype.bytes, dtype, as_float, as_int, is_float);
    StoreElement(out, position, kind, as_float, as_int, is_float);
  });
}

void Write(const char* path, int32_t kind, const void* data, int64_t rank,
           const int64_t* sizes, const int64_t* file_axes) {
  std::string header = std::string("{'descr': '") + Descr(kind) +
                       "', 'fortran_order': False, 'shape': ";
  std::vector<int64_t> shape(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) shape[i] = sizes[file_axes[i]];
  int64_t count = 0;
  if (delta_element_count(rank, shape.data(), &count) != 0)
    throw Failure{std::string("cannot write '") + path + "': shape " +
                  ShapeText(shape) + " has more than " +
                  DELTA_MAX_ELEMENTS_TEXT " elements"};
  header += ShapeText(shape) + ", }";
  // Magic (6) + version (2) + length (2) + header + '\n': a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  int bytes = static_cast<int>(delta_elem_bytes(kind));
  // The element of file position p is read from memory: walk the file in
  // C order with the memory strides of its axes.
  std::vector<int64_t> memory_strides(static_cast<size_t>(rank));
  int64_t stride = 1;
  for (int64_t d = rank; d-- > 0;) {
    memory_strides[d] = stride;
    stride *= sizes[d];
  }
  std::vector<int64_t> strides(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) strides[i] = memory_strides[file_axes[i]];
  size_t start = out.size();
  out.resize(start + static_cast<size_t>(count) * bytes);
  const char* source = static_cast<const char*>(data);
  ForEachElement(shape, strides, [&](int64_t position, int64_t offset) {
    std::memcpy(&out[start + position * bytes], source + offset * bytes,
                static_cast<size_t>(bytes));
  });
  FILE* file = std::fopen(path, "wb");
  if (file == nullptr)
    throw Failure{std::string("cannot write '") + path +
                  "': " + std::strerror(errno)};
  bool ok = std::fwrite(out.data(), 1, out.size(), file) == out.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok) throw Failure{std::string("cannot write '") + path + "'"};
}

// Runs `work` for a C entry point: 0, or -1 with the message of what it
// threw in `error` ("cannot VERB 'PATH'" for anything unexpected).
template <typename Work>
int Guarded(const char* verb, const char* path, char* error, int64_t error_size,
            Work work) {
  try {
    work();
    return 0;
  } catch (const Failure& failure) {
    SetError(error, error_size, failure.message);
  } catch (...) {
    SetError(error, error_size,
             std::string("cannot ") + verb + " '" + path + "'");
  }
  return -1;
}

}  // namespace

extern "C" {

int delta_npy_read(const char* path, int32_t kind, int64_t rank,
                   const int64_t* sizes, const char* const* names,
                   const int64_t* file_axes, void* out, char* error,
                   int64_t error_size) {
  return Guarded("read", path, error, error_size,
                 [&] { Read(path, kind, rank, sizes, names, file_axes, out); });
}

int delta_npy_read_block(const char* path, int32_t kind, int64_t rank,
                         const int64_t* sizes, const char* const* names,
                         const int64_t* file_axes, int64_t block_dim,
                         int64_t block_global, int64_t block_offset, void* out,
                         char* error, int64_t error_size) {
  return Guarded("read", path, error, error_size, [&] {
    Read(path, kind, rank, sizes, names, file_axes, out, block_dim,
         block_global, block_offset);
  });
}

int delta_npy_write(const char* path, int32_t kind, const void* data,
                    int64_t rank, const int64_t* sizes,
                    const int64_t* file_axes, char* error, int64_t error_size) {
  return Guarded("write", path, error, error_size,
                 [&] { Write(path, kind, data, rank, sizes, file_axes); });
}

int delta_npy_shape(const char* path, int64_t max_rank, int64_t* rank,
                    int64_t* shape, char* error, int64_t error_size) {
  return Guarded("read", path, error, error_size, [&] {
    File file = ReadFile(path, /*header_only=*/true);
    *rank = static_cast<int64_t>(file.shape.size());
    for (int64_t i = 0; i < *rank && i < max_rank; ++i)
      shape[i] = file.shape[i];
  });
}

void delta_read_npy(const char* file, int32_t line, int32_t column,
                    const char* path, int32_t kind, int64_t rank,
                    const int64_t* sizes, const char* const* names,
                    const int64_t* file_axes, void* out) {
  char error[1024];
  if (delta_npy_read(path, kind, rank, sizes, names, file_axes, out, error,
                     sizeof error) != 0)
    delta_fail(file, line, column, error);
}

void delta_write_npy(const char* file, int32_t line, int32_t column,
                     const char* path, int32_t kind, const void* data,
                     int64_t rank, const int64_t* sizes,
                     const int64_t* file_axes) {
  char error[1024];
  if (delta_npy_write(path, kind, data, rank, sizes, file_axes, error,
                      sizeof error) != 0)
    delta_fail(file, line, column, error);
}

}  // extern "C"
