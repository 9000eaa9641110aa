// Helpers of the transforms' unit tests: building functions by hand,
// printing and verifying modules.
#pragma once

#include <doctest/doctest.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/printer.h"
#include "compiler/ir/verifier.h"

namespace delta::transforms::testing {

inline std::string Print(const ir::Module& module) {
  std::string text;
  llvm::raw_string_ostream out(text);
  ir::PrintModule(module, out);
  return text;
}

inline ir::Type F32(ir::DimList dims = {}) {
  return ir::Type{ir::ElemKind::F32, nullptr, std::move(dims)};
}
inline ir::Type F64(ir::DimList dims = {}) {
  return ir::Type{ir::ElemKind::F64, nullptr, std::move(dims)};
}
inline ir::Type I64(ir::DimList dims = {}) {
  return ir::Type{ir::ElemKind::I64, nullptr, std::move(dims)};
}

inline ir::Value* AddParam(ir::Function* function, ir::Type type,
                           std::string name = "") {
  ir::Value* param = function->NewValue(std::move(type), std::move(name));
  param->block = function->body.get();
  param->index = static_cast<unsigned>(function->body->args.size());
  function->params.push_back(param);
  function->body->args.push_back(param);
  return param;
}

// Adds a size parameter: a dim of `function` whose size is an i64 argument.
inline ir::Dim* AddSizeParam(ir::Function* function, std::string name) {
  ir::Value* size = function->NewValue(I64(), name);
  ir::Dim* dim = function->NewDim(std::move(name), std::nullopt, size);
  function->size_params.push_back(size);
  return dim;
}

inline void Return(ir::Builder& builder, std::vector<ir::Value*> values) {
  for (ir::Value* value : values)
    builder.function()->result_types.push_back(value->type);
  builder.Return(std::move(values));
}

// Checks the module and prints what is wrong in the test's output.
// Reverse mode's adjoint of a shifted read `i == 0 ? c : y[i - 1]` over
// `d` with cotangent 2v: scatter_add(select(i == 0, 0, 2v), to_index(
// select(i != 0, i - 1, other))). Unmasked (`masked` false), v[0] lands
// at `other` too.
inline ir::Value* ShiftedScatter(ir::Builder& b, const ir::Dim* d, ir::Value* v,
                                 bool masked = true, int64_t other = 0) {
  using ir::ElemKind;
  using ir::OpKind;
  ir::Value* zero = b.IntConst(ElemKind::I64, 0);
  ir::Value* i = b.Convert(b.Iota(d), ElemKind::I64);
  ir::Value* first = b.Binary(OpKind::Eq, i, zero);
  ir::Value* k =
      b.Select(b.Unary(OpKind::Not, first),
               b.Binary(OpKind::Sub, i, b.IntConst(ElemKind::I64, 1)),
               b.IntConst(ElemKind::I64, other));
  ir::Value* doubled = b.Binary(OpKind::Mul, v, b.FloatConst(v->type.elem, 2));
  ir::Value* values =
      masked ? b.Select(first, b.FloatConst(v->type.elem, 0), doubled)
             : doubled;
  return b.ScatterAdd(values, {b.ToIndex(d, k)}, v->type);
}

inline void CheckValid(const ir::Module& module) {
  std::vector<std::string> errors = ir::Verify(module);
  std::string report;
  for (const std::string& error : errors) report += error + "\n";
  if (!errors.empty()) llvm::errs() << report << Print(module);
  CHECK(errors.empty());
}

// Whether `text` holds `part`, printing `text` when it does not.
inline bool Contains(const std::string& text, const std::string& part) {
  bool found = text.find(part) != std::string::npos;
  if (!found) llvm::errs() << "looked for `" << part << "` in\n" << text;
  return found;
}

inline size_t Count(const std::string& text, const std::string& part) {
  if (std::getenv("DELTA_TEST_PRINT")) llvm::errs() << text;
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos;
       at = text.find(part, at + 1))
    ++count;
  return count;
}

}  // namespace delta::transforms::testing
