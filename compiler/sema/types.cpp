// Scalar kinds and the type factory.
#include "compiler/sema/types.h"

#include <algorithm>

namespace delta::sema {

llvm::StringRef ScalarName(ScalarKind kind) {
  switch (kind) {
    case ScalarKind::F32:
      return "f32";
    case ScalarKind::F64:
      return "f64";
    case ScalarKind::I32:
      return "i32";
    case ScalarKind::I64:
      return "i64";
    case ScalarKind::Bool:
      return "bool";
    case ScalarKind::Float:
      return "T";
  }
  return "?";
}

bool IsFloat(ScalarKind kind) {
  return kind == ScalarKind::F32 || kind == ScalarKind::F64 ||
         kind == ScalarKind::Float;
}

bool IsInteger(ScalarKind kind) {
  return kind == ScalarKind::I32 || kind == ScalarKind::I64;
}

TypeContext::TypeContext() {
  error_ = Make(Type{});
  Type unit;
  unit.kind = Type::Kind::Tuple;
  unit_ = Make(std::move(unit));
}

const Type* TypeContext::Make(Type type) {
  types_.push_back(std::make_unique<Type>(std::move(type)));
  return types_.back().get();
}

const Type* TypeContext::Scalar(ScalarKind kind, DimSet dims) {
  Type type;
  type.kind = Type::Kind::Scalar;
  type.scalar = kind;
  type.dims = std::move(dims);
  return Make(std::move(type));
}

const Type* TypeContext::Index(const DimInfo* dim, DimSet dims) {
  Type type;
  type.kind = Type::Kind::Index;
  type.index_dim = dim;
  type.dims = std::move(dims);
  return Make(std::move(type));
}

const Type* TypeContext::LitVar(LitVarId var, DimSet dims) {
  Type type;
  type.kind = Type::Kind::LitVar;
  type.var = var;
  type.dims = std::move(dims);
  return Make(std::move(type));
}

const Type* TypeContext::Tuple(std::vector<const Type*> elements) {
  if (elements.empty()) return unit_;
  Type type;
  type.kind = Type::Kind::Tuple;
  type.elements = std::move(elements);
  return Make(std::move(type));
}

const Type* TypeContext::Struct(const StructInfo* info,
                                std::vector<const DimInfo*> args, DimSet lift,
                                ScalarKind float_arg) {
  Type type;
  type.kind = Type::Kind::Struct;
  type.struct_info = info;
  type.struct_args = std::move(args);
  type.struct_float = float_arg;
  type.dims = std::move(lift);
  return Make(std::move(type));
}

const Type* TypeContext::Function(const Callable* callable) {
  Type type;
  type.kind = Type::Kind::Function;
  type.callable = callable;
  return Make(std::move(type));
}

const Type* TypeContext::TypeParam(const TypeParamInfo* param) {
  Type type;
  type.kind = Type::Kind::TypeParam;
  type.type_param = param;
  return Make(std::move(type));
}

const Type* TypeContext::WithDims(const Type* type, DimSet dims) {
  if (type->dims == dims) return type;
  Type copy = *type;
  copy.dims = std::move(dims);
  return Make(std::move(copy));
}

DimInfo* TypeContext::NewDim(DimInfo info) {
  info.order = next_dim_order_++;
  dims_.push_back(std::make_unique<DimInfo>(info));
  return dims_.back().get();
}

}  // namespace delta::sema
