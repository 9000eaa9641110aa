// The command-line parser of args.h: values of main's parameters from argv.

#include "runtime/args.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>

#include "runtime/format.h"
#include "runtime/npy.h"

namespace {

// argv of the last successful parse: a path parameter's text is argv's.
const char* const* parsed_argv = nullptr;

const char* KindName(int32_t kind) {
  return kind == DELTA_ARG_PATH ? "path" : delta::runtime::ElemName(kind);
}

// Parses `text` as a value of `kind` into `slot`; false if it does not
// parse (the whole text must be the value).
bool ParseValue(const char* text, int32_t kind, uint64_t* slot) {
  *slot = 0;
  char* end = nullptr;
  errno = 0;
  // strtoll and strtod skip leading spaces; a value must not have any.
  if (kind != DELTA_ARG_PATH &&
      std::isspace(static_cast<unsigned char>(*text)) != 0)
    return false;
  switch (kind) {
    case DELTA_ELEM_I32:
    case DELTA_ELEM_I64: {
      long long value = std::strtoll(text, &end, 10);
      if (*text == '\0' || *end != '\0' || errno == ERANGE) return false;
      if (kind == DELTA_ELEM_I32) {
        if (value < std::numeric_limits<int32_t>::min() ||
            value > std::numeric_limits<int32_t>::max())
          return false;
        auto narrow = static_cast<int32_t>(value);
        std::memcpy(slot, &narrow, sizeof narrow);
      } else {
        auto wide = static_cast<int64_t>(value);
        std::memcpy(slot, &wide, sizeof wide);
      }
      return true;
    }
    case DELTA_ELEM_F32:
    case DELTA_ELEM_F64: {
      double value = std::strtod(text, &end);
      if (*text == '\0' || *end != '\0') return false;
      if (kind == DELTA_ELEM_F32) {
        auto narrow = static_cast<float>(value);
        std::memcpy(slot, &narrow, sizeof narrow);
      } else {
        std::memcpy(slot, &value, sizeof value);
      }
      return true;
    }
    case DELTA_ELEM_BOOL: {
      bool is_true = std::strcmp(text, "true") == 0;
      if (!is_true && std::strcmp(text, "false") != 0) return false;
      *reinterpret_cast<unsigned char*>(slot) = is_true ? 1 : 0;
      return true;
    }
    case DELTA_ARG_PATH:
      if (*text == '\0') return false;
      std::memcpy(slot, &text, sizeof text);
      return true;
    default:
      return false;
  }
}

const char* ProgramName(int32_t argc, const char* const* argv) {
  if (argc < 1 || argv[0] == nullptr || *argv[0] == '\0') return "program";
  const char* slash = std::strrchr(argv[0], '/');
  return slash != nullptr ? slash + 1 : argv[0];
}

void PrintUsage(const char* program, int64_t count, const char* const* names,
                const int32_t* kinds) {
  std::string line = std::string("usage: ") + program;
  for (int64_t i = 0; i < count; ++i)
    line += std::string(" ") + names[i] + ":" + KindName(kinds[i]);
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

int32_t delta_parse_args(int32_t argc, const char* const* argv, int64_t count,
                         const char* const* names, const int32_t* kinds,
                         uint64_t* slots) {
  const char* program = ProgramName(argc, argv);
  int64_t given = argc > 0 ? argc - 1 : 0;
  std::fflush(stdout);
  if (given != count) {
    std::fprintf(stderr, "%s: error: expected %lld argument%s, got %lld\n",
                 program, static_cast<long long>(count), count == 1 ? "" : "s",
                 static_cast<long long>(given));
    PrintUsage(program, count, names, kinds);
    return 1;
  }
  for (int64_t i = 0; i < count; ++i) {
    if (!ParseValue(argv[i + 1], kinds[i], &slots[i])) {
      std::fprintf(stderr,
                   "%s: error: argument %lld, '%s', is not a valid %s for "
                   "%s\n",
                   program, static_cast<long long>(i + 1), argv[i + 1],
                   KindName(kinds[i]), names[i]);
      PrintUsage(program, count, names, kinds);
      return 1;
    }
  }
  parsed_argv = argv;
  return 0;
}

const char* delta_path_arg(int64_t index) {
  if (parsed_argv == nullptr) return "";
  return parsed_argv[index + 1];
}

int32_t delta_npy_extents(int64_t count, const int64_t* path_params,
                          const int64_t* axes, const char* file,
                          const int32_t* lines, const int32_t* columns,
                          int64_t* sizes) {
  for (int64_t i = 0; i < count; ++i) {
    const char* path = delta_path_arg(path_params[i]);
    constexpr int64_t kMaxRank = 64;
    int64_t shape[kMaxRank];
    int64_t rank = 0;
    char error[1024];
    std::string message;
    if (delta_npy_shape(path, kMaxRank, &rank, shape, error, sizeof error) !=
        0) {
      message = error;
    } else if (axes[i] >= rank || axes[i] >= kMaxRank) {
      message = std::string("'") + path + "' has rank " + std::to_string(rank) +
                ": no axis " + std::to_string(axes[i]);
    } else {
      sizes[i] = shape[axes[i]];
      continue;
    }
    std::fflush(stdout);
    std::fprintf(stderr, "%s:%d:%d: error: %s\n", file, lines[i], columns[i],
                 message.c_str());
    return 1;
  }
  return 0;
}
