// libFuzzer target for the whole front end: any bytes must give diagnostics
// or a checked program, never a crash, a hang or a sanitizer report.
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include <cstddef>
#include <cstdint>

#include "compiler/diagnostics/diagnostics.h"
#include "compiler/sema/sema.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char*>(data), size);
  llvm::SourceMgr sources;
  // Diagnostics are still rendered (into a null stream) because rendering
  // spans is part of what must not crash; the input picks the format so
  // that both renderers are exercised.
  delta::DiagFormat format =
      size % 2 == 0 ? delta::DiagFormat::Text : delta::DiagFormat::Json;
  delta::DiagnosticEngine diags(sources, llvm::nulls(), format);
  delta::sema::CheckOptions options;
  options.stdlib_dirs.push_back(DELTA_SOURCE_STDLIB_DIR);
  delta::sema::CheckSource(text, "fuzz.dl", sources, diags, options);
  return 0;
}
