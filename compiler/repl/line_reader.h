// Reads the REPL's input lines: with libedit's line editing, completion and
// history at a terminal, plainly from a pipe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace delta::repl {

struct EditorState;  // libedit's editor and history (line_reader.cpp)

// libedit is used directly (not through llvm::LineEditor, which enters
// every line into the history itself) so that a multi-line entry is one
// history entry: Up recalls the whole definition, not its last line.
class LineReader {
 public:
  // `interactive`: stdin is a terminal; the history is ~/.delta_history.
  explicit LineReader(bool interactive);
  ~LineReader();
  LineReader(const LineReader&) = delete;
  LineReader& operator=(const LineReader&) = delete;

  // The names that Tab completes.
  void SetCompletions(std::vector<std::string> names);
  // One line without its newline (an entry recalled from the history may
  // hold several); nullopt at end of input or when a signal interrupts.
  std::optional<std::string> Read(const std::string& prompt);
  // Enters a complete input, lines joined by '\n', into the history.
  void AddToHistory(const std::string& entry);

 private:
  std::unique_ptr<EditorState> editor_;  // null when not interactive
};

}  // namespace delta::repl
