// The REPL's input lines through libedit: line editing, Tab completion of
// the session's names, and a history whose entries are whole inputs.
#include "compiler/repl/line_reader.h"

#include <histedit.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <iostream>

namespace delta::repl {

struct EditorState {
  EditLine* editor = nullptr;
  History* history = nullptr;
  std::string history_path;  // "" without $HOME: no history file
  std::string prompt;
  std::vector<std::string> names;  // sorted, unique
};

namespace {

EditorState* StateOf(EditLine* editor) {
  EditorState* state = nullptr;
  if (el_get(editor, EL_CLIENTDATA, &state) != 0) return nullptr;
  return state;
}

const char* Prompt(EditLine* editor) {
  EditorState* state = StateOf(editor);
  return state != nullptr ? state->prompt.c_str() : "> ";
}

bool IsWordChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Tab: completes the word before the cursor as far as the names that
// start with it agree, and lists them when they agree no further.
unsigned char Complete(EditLine* editor, int /*key*/) {
  EditorState* state = StateOf(editor);
  if (state == nullptr) return CC_ERROR;
  const LineInfo* line = el_line(editor);
  llvm::StringRef before(line->buffer,
                         static_cast<size_t>(line->cursor - line->buffer));
  size_t start = before.size();
  while (start > 0 && IsWordChar(before[start - 1])) --start;
  llvm::StringRef word = before.substr(start);
  std::vector<llvm::StringRef> matches;
  for (const std::string& name : state->names)
    if (llvm::StringRef(name).starts_with(word)) matches.push_back(name);
  if (matches.empty()) return CC_REFRESH_BEEP;
  llvm::StringRef common = matches.front();
  for (llvm::StringRef match : matches) {
    size_t length = 0;
    while (length < common.size() && length < match.size() &&
           common[length] == match[length])
      ++length;
    common = common.take_front(length);
  }
  if (common.size() > word.size()) {
    el_insertstr(editor, common.drop_front(word.size()).str().c_str());
    return CC_REFRESH;
  }
  std::string list;
  for (llvm::StringRef match : matches) list += "\n" + match.str();
  std::fputs(list.c_str(), stdout);
  std::fflush(stdout);
  return CC_REDISPLAY;  // the prompt and the line again, under the list
}

}  // namespace

LineReader::LineReader(bool interactive) {
  if (!interactive) return;
  editor_ = std::make_unique<EditorState>();
  if (std::optional<std::string> home = llvm::sys::Process::GetEnv("HOME")) {
    llvm::SmallString<256> path(*home);
    llvm::sys::path::append(path, ".delta_history");
    editor_->history_path = path.str().str();
  }
  HistEvent event;
  editor_->history = history_init();
  history(editor_->history, &event, H_SETSIZE, 800);
  history(editor_->history, &event, H_SETUNIQUE, 1);
  if (!editor_->history_path.empty())
    history(editor_->history, &event, H_LOAD, editor_->history_path.c_str());

  EditLine* editor = el_init("dlc", stdin, stdout, stderr);
  editor_->editor = editor;
  el_set(editor, EL_CLIENTDATA, editor_.get());
  el_set(editor, EL_PROMPT, Prompt);
  el_set(editor, EL_EDITOR, "emacs");
  el_set(editor, EL_HIST, history, editor_->history);
  el_set(editor, EL_ADDFN, "tab_complete", "Tab completion", Complete);
  el_set(editor, EL_BIND, "\t", "tab_complete", nullptr);
  // Keys as in bash: backward search, delete the word before, Delete.
  el_set(editor, EL_BIND, "^r", "em-inc-search-prev", nullptr);
  el_set(editor, EL_BIND, "^w", "ed-delete-prev-word", nullptr);
  el_set(editor, EL_BIND, "\033[3~", "ed-delete-next-char", nullptr);
}

LineReader::~LineReader() {
  if (!editor_) return;
  HistEvent event;
  if (!editor_->history_path.empty())
    history(editor_->history, &event, H_SAVE, editor_->history_path.c_str());
  history_end(editor_->history);
  el_end(editor_->editor);
  std::fputs("\n", stdout);
}

void LineReader::SetCompletions(std::vector<std::string> names) {
  if (!editor_) return;
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  editor_->names = std::move(names);
}

std::optional<std::string> LineReader::Read(const std::string& prompt) {
  std::string text;
  if (!editor_) {
    if (!std::getline(std::cin, text)) return std::nullopt;
    return text;
  }
  editor_->prompt = prompt;
  int length = 0;
  const char* line = el_gets(editor_->editor, &length);
  if (line == nullptr || length == 0) return std::nullopt;  // end or signal
  text.assign(line, static_cast<size_t>(length));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r'))
    text.pop_back();
  return text;
}

void LineReader::AddToHistory(const std::string& entry) {
  if (!editor_ || llvm::StringRef(entry).trim().empty()) return;
  HistEvent event;
  history(editor_->history, &event, H_ENTER, entry.c_str());
}

}  // namespace delta::repl
