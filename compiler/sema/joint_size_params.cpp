// Size parameters used together. Distinct size parameters are distinct dims
// inside a body, so `fn attention[s, t, e, f]` may build `f32[s, t]`; a call
// that binds `s` and `t` to one dim would make that array carry the dim
// twice. The signature alone does not show it, so the checker records, for
// each function, the pairs of size parameters that one leaf of its body
// carries together (directly, or through a call that binds a callee's pair
// to them), and a call may not bind such a pair to one dim. Candidates of
// an ambiguous call are filtered by the same rule (check_call.cpp), so every
// binding the ambiguity error suggests is one that works.
#include <llvm/ADT/STLExtras.h>

#include <functional>

#include "compiler/sema/checker.h"

namespace delta::sema {

namespace {

bool AddPair(FnInfo* fn, const DimInfo* a, const DimInfo* b,
             llvm::function_ref<std::string()> witness) {
  if (a == b) return false;
  const auto& params = fn->signature.size_params;
  if (!llvm::is_contained(params, a) || !llvm::is_contained(params, b))
    return false;
  for (const JointSizeParams& pair : fn->joint_size_params)
    if ((pair.first == a && pair.second == b) ||
        (pair.first == b && pair.second == a))
      return false;
  fn->joint_size_params.push_back({a, b, witness()});
  return true;
}

const DimInfo* Lookup(const DimMap& map, const DimInfo* dim) {
  auto it = map.find(dim);
  return it == map.end() ? dim : it->second;
}

// How a pair that a caller inherits from a call is explained.
std::string Through(const FnInfo* callee, const JointSizeParams& pair) {
  return "the call of `" + callee->decl->name.name.str() + "` (" +
         pair.witness + ")";
}

}  // namespace

void Checker::NoteJointSizeParams(FnInfo* fn, const Type* type) {
  if (!fn || fn->signature.size_params.size() < 2 || !type) return;
  // Every leaf with the dims it carries: its own and its structs' lift dims.
  std::function<void(const Type*, const DimSet&)> visit =
      [&](const Type* type, const DimSet& lifted) {
        type = Resolve(type);
        switch (type->kind) {
          case Type::Kind::Tuple:
            for (const Type* element : type->elements) visit(element, lifted);
            return;
          case Type::Kind::Struct: {
            for (const Type* field : FieldTypes(type))
              visit(field, lifted.Union(type->dims));
            return;
          }
          case Type::Kind::Function:
          case Type::Kind::Error:
            return;
          default:
            break;
        }
        DimSet dims = type->dims.Union(lifted);
        std::vector<const DimInfo*> present;
        for (const DimInfo* param : fn->signature.size_params)
          if (dims.Contains(param)) present.push_back(param);
        for (size_t i = 0; i < present.size(); ++i)
          for (size_t j = i + 1; j < present.size(); ++j)
            AddPair(fn, present[i], present[j],
                    [&] { return TypeString(types().WithDims(type, dims)); });
      };
  visit(type, {});
}

FnInfo* Checker::CalledFn(const Callable* callable, DimMap* bound) {
  while (callable) {
    switch (callable->kind) {
      case Callable::Kind::Fn:
        return callable->fn;
      case Callable::Kind::SizeBound:
        for (auto [param, dim] : callable->bindings) bound->emplace(param, dim);
        callable = callable->inner;
        break;
      case Callable::Kind::Grad:
      case Callable::Kind::Vmap:
      case Callable::Kind::Checkpoint:
        callable = callable->inner;
        break;
      default:
        return nullptr;
    }
  }
  return nullptr;
}

std::vector<Checker::DistinctPair> Checker::DistinctDims(
    const Callable* callable) {
  DimMap bound;
  FnInfo* fn = CalledFn(callable, &bound);
  if (!fn) return {};
  std::vector<DistinctPair> pairs;
  for (const JointSizeParams& pair : fn->joint_size_params)
    pairs.push_back(
        {Lookup(bound, pair.first), Lookup(bound, pair.second), &pair});
  return pairs;
}

void Checker::RecordJointCall(const CallInfo* info, const Signature& signature,
                              Span span, FnInfo* caller) {
  if (!info || !info->callee) return;
  JointCall call;
  call.callee = CalledFn(info->callee, &call.binding);
  if (!call.callee) return;
  for (size_t i = 0; i < signature.size_params.size(); ++i)
    call.binding[signature.size_params[i]] = info->size_args[i];
  call.caller = caller;
  call.span = span;
  if (caller)
    for (const JointSizeParams& pair : call.callee->joint_size_params)
      AddPair(caller, Lookup(call.binding, pair.first),
              Lookup(call.binding, pair.second),
              [&] { return Through(call.callee, pair); });
  joint_calls_.push_back(std::move(call));
}

void Checker::CheckJointCalls(size_t first) {
  // A callee declared later in the module had no pairs when it was called:
  // carry pairs over until nothing changes (there is no recursion, so this
  // ends after at most as many rounds as the longest chain of calls).
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = first; i < joint_calls_.size(); ++i) {
      const JointCall& call = joint_calls_[i];
      if (!call.caller) continue;
      for (const JointSizeParams& pair : call.callee->joint_size_params)
        changed |= AddPair(call.caller, Lookup(call.binding, pair.first),
                           Lookup(call.binding, pair.second),
                           [&] { return pair.witness; });
    }
  }
  for (size_t i = first; i < joint_calls_.size(); ++i) {
    const JointCall& call = joint_calls_[i];
    for (const JointSizeParams& pair : call.callee->joint_size_params) {
      const DimInfo* dim = Lookup(call.binding, pair.first);
      if (dim != Lookup(call.binding, pair.second)) continue;
      std::string name = call.callee->decl->name.name.str();
      Error(DiagKind::DuplicateDim, call.span,
            "dim " + dim->name.str() +
                " would appear twice: this call binds `" + name +
                "`'s size parameters `" + pair.first->name.str() + "` and `" +
                pair.second->name.str() + "` both to `" + dim->name.str() +
                "`, and `" + name + "` uses them together in " + pair.witness +
                "; declare a second dim of the same size (dim " +
                dim->name.str() + "2 = " + dim->name.str() +
                ";) and rename one argument's `" + dim->name.str() + "` to it");
      break;
    }
  }
  joint_calls_.resize(first);
}

}  // namespace delta::sema
