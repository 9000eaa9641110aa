// `dlc fmt`: formats, checks or verifies files with the canonical
// pretty-printer (printer.cpp), and reports syntax errors and files it
// cannot read or write.
#include "compiler/format/format.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/format/comments.h"
#include "compiler/format/printer.h"
#include "compiler/syntax/ast_dump.h"
#include "compiler/syntax/parse.h"

namespace delta::format {
namespace {

// The AST of `text` as S-expressions, or nothing on a syntax error.
std::optional<std::string> DumpAst(llvm::StringRef text, llvm::StringRef name,
                                   llvm::raw_ostream& err) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  ast::Arena arena;
  ast::Module* module = ParseModule(sources, buffer, arena, diags);
  if (diags.HasErrors()) return std::nullopt;
  return ast::Dump(*module);
}

// `dlc fmt --verify`: the formatted text parses to the same AST, formatting
// it again changes nothing, and no comment is lost.
bool Verify(llvm::StringRef text, const std::string& formatted,
            const std::string& path, size_t width, llvm::raw_ostream& err) {
  std::optional<std::string> before = DumpAst(text, path, err);
  std::optional<std::string> after =
      DumpAst(formatted, path + " (formatted)", err);
  if (!before || !after || *before != *after) {
    err << path << ": formatting changed the AST\n";
    return false;
  }
  std::optional<std::string> again =
      FormatSource(formatted, path, err, DiagFormat::Text, false, width);
  if (!again || *again != formatted) {
    err << path << ": formatting is not idempotent\n";
    return false;
  }
  if (CollectComments(text).size() != CollectComments(formatted).size()) {
    err << path << ": formatting lost a comment\n";
    return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> FormatSource(llvm::StringRef text,
                                        llvm::StringRef name,
                                        llvm::raw_ostream& err,
                                        DiagFormat diagnostics, bool color,
                                        size_t width) {
  llvm::SourceMgr sources;
  DiagnosticEngine diags(sources, err, diagnostics, color);
  unsigned buffer = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(text, name), llvm::SMLoc());
  ast::Arena arena;
  ast::Module* module = ParseModule(sources, buffer, arena, diags);
  if (diags.HasErrors()) return std::nullopt;
  llvm::StringRef source = sources.getMemoryBuffer(buffer)->getBuffer();
  return PrintModule(source, *module, width);
}

int FormatFiles(const FormatOptions& options, llvm::raw_ostream& out,
                llvm::raw_ostream& err) {
  int status = 0;
  for (const std::string& path : options.files) {
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
    if (!file) {
      err << "dlc: error: cannot read '" << path
          << "': " << file.getError().message() << "\n";
      status = 1;
      continue;
    }
    llvm::StringRef text = (*file)->getBuffer();
    std::optional<std::string> formatted = FormatSource(
        text, path, err, options.diagnostics, options.color, options.width);
    if (!formatted) {
      err << "dlc: '" << path << "' has syntax errors; not formatted\n";
      status = 1;
      continue;
    }
    if (options.verify) {
      if (!Verify(text, *formatted, path, options.width, err)) status = 1;
      continue;
    }
    if (*formatted == text) continue;
    if (options.check) {
      out << path << ": not formatted (run 'dlc fmt " << path << "')\n";
      status = 1;
      continue;
    }
    std::error_code error;
    llvm::raw_fd_ostream file_out(path, error, llvm::sys::fs::OF_Text);
    if (error) {
      err << "dlc: error: cannot write '" << path << "': " << error.message()
          << "\n";
      status = 1;
      continue;
    }
    file_out << *formatted;
  }
  return status;
}

}  // namespace delta::format
