// `print` for generated code: the items of a print op (text, or values
// formatted by format.h per language.md section 7) are concatenated into a
// per-thread line that is written in one piece.
#include <cstdio>
#include <cstring>

#include "runtime/format.h"
#include "runtime/runtime.h"

namespace {

// The line being printed; per thread so that prints never interleave.
thread_local DeltaBuffer line = {};

}  // namespace

// Weak: linked only in programs with a sharded dim (runtime/runtime.cpp).
extern "C" int32_t delta_shard_is_root(void) __attribute__((weak));

extern "C" {

void delta_print_begin(void) { line.size = 0; }

void delta_print_text(const char* text) {
  delta_buffer_append(&line, text, std::strlen(text));
}

void delta_print_value(int32_t kind, const void* data, int64_t rank,
                       const int64_t* sizes, const char* const* names) {
  if (delta_format_for_print(&line, kind, data, rank, sizes, names) != 0)
    delta_fail(nullptr, 0, 0, "cannot print an array of invalid shape");
}

void delta_print_end(void) {
  delta_buffer_append(&line, "\n", 1);
  if (line.failed) delta_fail(nullptr, 0, 0, "out of memory printing");
  // In a sharded run, one process prints for all.
  if (delta_shard_is_root == nullptr || delta_shard_is_root())
    std::fwrite(line.data, 1, line.size, stdout);
  // The buffer is kept for the next line; a program prints many.
  line.size = 0;
}

}  // extern "C"
