// The IR interpreter: slow, simple and obviously right, the oracle that
// every backend and every gradient is checked against (docs/internals/
// interpreter.md).
#pragma once

#include <llvm/Support/Error.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::interpreter {

// A value at run time: the Value's type, the size of each of its dims (in
// canonical order) and dense row-major storage. Floats live in `floats`
// (f32 values are always rounded to float); i32, i64, bool (0/1) and index
// values (positions) live in `ints`.
struct Tensor {
  ir::ElemKind elem = ir::ElemKind::F32;
  const ir::Dim* index_dim = nullptr;
  ir::DimList dims;
  std::vector<int64_t> shape;
  std::vector<double> floats;
  std::vector<int64_t> ints;

  bool HasFloatStorage() const { return ir::IsFloat(elem); }
  size_t NumElements() const {
    return HasFloatStorage() ? floats.size() : ints.size();
  }
  ir::Type GetType() const { return ir::Type{elem, index_dim, dims}; }

  static Tensor Float(ir::ElemKind elem, double value);
  static Tensor Int(ir::ElemKind elem, int64_t value);
  static Tensor Bool(bool value);
  static Tensor Index(const ir::Dim* dim, int64_t position);
  // An array; `values` are row-major in canonical order, `shape` gives the
  // size of each of `dims` (also in canonical order).
  static Tensor FloatArray(ir::ElemKind elem, ir::DimList dims,
                           std::vector<int64_t> shape,
                           std::vector<double> values);
  static Tensor IntArray(ir::ElemKind elem, ir::DimList dims,
                         std::vector<int64_t> shape,
                         std::vector<int64_t> values,
                         const ir::Dim* index_dim = nullptr);
};

// The §7 text of a value: `3`, `0.1`, `[a=2, b=3] [[1, 2, 3], [4, 5, 6]]`,
// as `print` writes it (large arrays summarized, runtime/format.h).
std::string FormatTensor(const Tensor& tensor);

// .npy files through the runtime's code (runtime/npy.h), as read_npy and
// write_npy do: axis k of the file is dim axes[k] of the tensor (positions
// in its canonical order). ReadNpy fills `tensor`, whose type and shape are
// set. Both return false with `error` set when the file does not fit.
// With a block, `tensor` is the block [offset, offset + its extent) along
// its dim number `dim` of an array whose extent there is `global` (a
// process's block of a sharded dim, runtime/npy.h).
struct NpyBlock {
  int64_t dim = -1;  // none: the whole array
  int64_t global = 0;
  int64_t offset = 0;
};
bool ReadNpy(const std::string& path, const std::vector<int64_t>& axes,
             Tensor& tensor, std::string& error, const NpyBlock& block = {});
bool WriteNpy(const std::string& path, const std::vector<int64_t>& axes,
              const Tensor& tensor, std::string& error);

struct InterpreterOptions {
  // Evaluates every f32 op in double precision without rounding to float
  // (the values keep type f32). Finite differences of f32 programs need it:
  // with float rounding, (f(x+h) - f(x-h)) / 2h is mostly rounding noise.
  bool f32_as_f64 = false;
};

class Interpreter {
 public:
  // `print` ops write to `out`.
  explicit Interpreter(const ir::Module& module, llvm::raw_ostream& out,
                       InterpreterOptions options = {});

  // Calls `function` with its size parameters (i64 scalars) first, then its
  // parameters. Returns the results, or a run-time error whose message
  // starts with `file:line:col: error: `; `loc` is the call's (for the
  // error of a chain of calls too deep for the interpreter).
  llvm::Expected<std::vector<Tensor>> Call(const ir::Function& function,
                                           std::vector<Tensor> args,
                                           const ir::Loc& loc = {});

  const ir::Module& module() const { return module_; }

  // The kinds of the ops executed so far (for the coverage test).
  const std::set<ir::OpKind>& executed_kinds() const { return executed_kinds_; }

 private:
  friend class Evaluator;
  const ir::Module& module_;
  llvm::raw_ostream& out_;
  InterpreterOptions options_;
  std::set<ir::OpKind> executed_kinds_;
  int call_depth_ = 0;
};

// Runs the module's `main` function; it must have no parameters.
llvm::Error RunMain(const ir::Module& module, llvm::raw_ostream& out);

// Runs `main` with `args` as the program's argv (args[0]: its name for
// messages; the rest fill main's parameters, parsed by the runtime's
// delta_parse_args as compiled programs do). Returns the exit status: 0, or
// 1 after a usage message on stderr when the arguments do not fit.
llvm::Expected<int> RunMain(const ir::Module& module, llvm::raw_ostream& out,
                            const std::vector<std::string>& args);

}  // namespace delta::interpreter
