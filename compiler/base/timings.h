// Wall-clock times of a compilation's steps, printed by --time-passes as one
// table per stage (Delta's passes, then LLVM's optimization and code
// generation), so that users see where the time goes.
#pragma once

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace delta {

using Clock = std::chrono::steady_clock;

// Seconds from `start` until now.
inline double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class Timings {
 public:
  void Add(llvm::StringRef name, double seconds) {
    rows_.push_back({name.str(), seconds});
  }

  // Runs `step` and records its time under `name`; returns what it returns.
  template <typename Step>
  decltype(auto) Time(llvm::StringRef name, Step&& step) {
    struct Record {
      Timings& timings;
      llvm::StringRef name;
      Clock::time_point start = Clock::now();
      ~Record() { timings.Add(name, SecondsSince(start)); }
    } record{*this, name};
    return std::forward<Step>(step)();
  }

  bool empty() const { return rows_.empty(); }

  // Prints "===-- TITLE --===", a line per step (ms and share of the total)
  // and the total; with `total_label` empty, no total line.
  void Print(llvm::StringRef title, llvm::raw_ostream& out,
             llvm::StringRef total_label = "total") const {
    double total = 0;
    for (const Row& row : rows_) total += row.seconds;
    out << "===-- " << title << " --===\n";
    for (const Row& row : rows_)
      out << llvm::format("%10.3f ms  %5.1f%%  ", row.seconds * 1e3,
                          total > 0 ? 100 * row.seconds / total : 0.0)
          << row.name << "\n";
    if (!total_label.empty())
      out << llvm::format("%10.3f ms  100.0%%  ", total * 1e3) << total_label
          << "\n";
  }

 private:
  struct Row {
    std::string name;
    double seconds;
  };
  std::vector<Row> rows_;
};

}  // namespace delta
