// Printing of types in the user's terms: dims in canonical order, structs
// with their size arguments, imported structs qualified by their module.
#include "compiler/sema/format_type.h"

#include "compiler/sema/checker.h"

namespace delta::sema {
namespace {

std::string Bracket(const std::string& inside) {
  return inside.empty() ? "" : "[" + inside + "]";
}

// A dim of an imported module is written with its module's name, so that
// it cannot be mistaken for a dim of the same name here.
std::string DimName(const DimInfo* dim) {
  if (dim->module && !dim->module->is_main)
    return dim->module->name + "." + dim->name.str();
  return dim->name.str();
}

std::string JoinDims(const std::vector<const DimInfo*>& dims) {
  std::string result;
  for (const DimInfo* dim : dims) {
    if (!result.empty()) result += ", ";
    result += DimName(dim);
  }
  return result;
}

}  // namespace

std::string FormatDims(const DimSet& dims) {
  return JoinDims(std::vector<const DimInfo*>(dims.begin(), dims.end()));
}

std::string FormatType(const Type* type, LiteralSolver* literals) {
  std::string dims = Bracket(FormatDims(type->dims));
  switch (type->kind) {
    case Type::Kind::Error:
      return "<error>";
    case Type::Kind::Scalar:
      return ScalarName(type->scalar).str() + dims;
    case Type::Kind::Index:
      return DimName(type->index_dim) + dims;
    case Type::Kind::LitVar:
      if (literals) {
        if (auto value = literals->Value(type->var))
          return ScalarName(*value).str() + dims;
        return (literals->IsFloat(type->var) ? "{float}" : "{int}") + dims;
      }
      return "{literal}" + dims;
    case Type::Kind::Tuple: {
      std::string result = "(";
      for (size_t i = 0; i < type->elements.size(); ++i) {
        if (i) result += ", ";
        result += FormatType(type->elements[i], literals);
      }
      if (type->elements.size() == 1) result += ",";
      return result + ")";
    }
    case Type::Kind::Struct: {
      const StructInfo* info = type->struct_info;
      std::string result;
      if (info->module && !info->module->is_main)
        result = info->module->name + ".";
      result += info->decl->name.name.str();
      // `Dense[f64, i, o]`; an f32 instance is written as before `T`
      // existed, `Dense[i, o]`.
      std::string args = JoinDims(type->struct_args);
      if (info->float_generic && type->struct_float != ScalarKind::F32)
        args = ScalarName(type->struct_float).str() +
               (args.empty() ? "" : ", " + args);
      result += Bracket(args);
      return result + dims;
    }
    case Type::Kind::Function: {
      const Callable* callable = type->callable;
      // A function named before signatures are checked (in a module dim's
      // size) has no signature yet.
      if (callable->kind == Callable::Kind::Fn &&
          callable->fn->signature.result != nullptr)
        return FormatSignature(callable->fn->signature, literals);
      if (callable->signature)
        return FormatSignature(*callable->signature, literals);
      return "fn " + FormatCallableName(callable);
    }
    case Type::Kind::TypeParam:
      return type->type_param->name.str();
  }
  return "?";
}

std::string FormatSignature(const Signature& signature,
                            LiteralSolver* literals) {
  std::string brackets = JoinDims(signature.size_params);
  for (const Type* param : signature.type_params)
    brackets += (brackets.empty() ? "" : ", ") + param->type_param->name.str() +
                ": space";
  if (signature.float_generic)
    brackets += std::string(brackets.empty() ? "" : ", ") + "T: float";
  std::string result = "fn" + Bracket(brackets) + "(";
  for (size_t i = 0; i < signature.params.size(); ++i) {
    if (i) result += ", ";
    result += FormatType(signature.params[i], literals);
  }
  return result + ") -> " + FormatType(signature.result, literals);
}

std::string FormatCallableName(const Callable* callable) {
  switch (callable->kind) {
    case Callable::Kind::Fn:
      return callable->fn->decl->name.name.str();
    case Callable::Kind::Builtin:
      return "builtin";
    case Callable::Kind::Lambda:
      return "lambda";
    case Callable::Kind::Grad:
      return std::string(callable->with_value ? "value_and_grad(" : "grad(") +
             FormatCallableName(callable->inner) + ")";
    case Callable::Kind::Vmap:
      return "vmap(" + FormatCallableName(callable->inner) +
             ", over: " + callable->over->name.str() + ")";
    case Callable::Kind::Checkpoint:
      return "checkpoint(" + FormatCallableName(callable->inner) + ")";
    case Callable::Kind::Pullback:
      return "pullback";
    case Callable::Kind::SizeBound:
      return FormatCallableName(callable->inner);
    case Callable::Kind::Param:
      return callable->param_name.str();
  }
  return "function";
}

}  // namespace delta::sema
