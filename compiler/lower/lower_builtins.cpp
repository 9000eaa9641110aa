// Lowering of builtin calls (section 5 of the contract) and of print.
#include "compiler/lower/lowerer.h"

namespace delta::lower {
namespace {

// The op of a DELTA_MATH_OP row of ops.def, which the builtin of the same
// name lowers to.
ir::OpKind UnaryKind(sema::Builtin builtin) {
  switch (builtin) {
#define DELTA_MATH_OP(Name, ...) \
  case sema::Builtin::Name:      \
    return ir::OpKind::Name;
#define DELTA_OP(...)
#include "compiler/ir/ops.def"
    default:
      return ir::OpKind::Neg;
  }
}

std::optional<ir::ReduceKind> ReduceKindOf(sema::Builtin builtin) {
  using B = sema::Builtin;
  switch (builtin) {
    case B::Sum:
    case B::Mean:
    case B::Dot:
      return ir::ReduceKind::Sum;
    case B::Prod:
      return ir::ReduceKind::Prod;
    case B::Max:
      return ir::ReduceKind::Max;
    case B::Min:
      return ir::ReduceKind::Min;
    case B::Argmax:
      return ir::ReduceKind::Argmax;
    case B::Argmin:
      return ir::ReduceKind::Argmin;
    default:
      return std::nullopt;
  }
}

// The binary op that combines two partial results of a reduction.
ir::OpKind CombineKind(ir::ReduceKind kind) {
  switch (kind) {
    case ir::ReduceKind::Prod:
      return ir::OpKind::Mul;
    case ir::ReduceKind::Max:
      return ir::OpKind::Max;
    case ir::ReduceKind::Min:
      return ir::OpKind::Min;
    default:
      return ir::OpKind::Add;
  }
}

// Combines the partial results of a reduction, one per leaf, with `kind`.
ir::Value* Fold(ir::Builder& b, ir::OpKind kind, const Leaves& parts) {
  ir::Value* folded = parts.front();
  for (size_t i = 1; i < parts.size(); ++i)
    folded = b.Binary(kind, folded, parts[i]);
  return folded;
}

// Appends text to a print template, merging adjacent pieces.
void AddText(std::vector<ir::PrintItem>& items, const std::string& text) {
  if (!items.empty() && !items.back().is_value)
    items.back().text += text;
  else
    items.push_back({false, text});
}

}  // namespace

Leaves Lowerer::Builtin(const ast::CallExpr* call, sema::Builtin builtin) {
  using B = sema::Builtin;
  ir::Builder& b = *builder_;
  const sema::CallInfo* info = call->info;
  auto arg = [&](size_t i) { return Expr(call->args[i].value); };
  auto dims_of_call = [&]() {
    ir::DimList dims;
    if (info)
      for (const sema::DimInfo* dim : info->dim_args) dims.Insert(DimOf(dim));
    return dims;
  };
  switch (builtin) {
#define DELTA_MATH_OP(Name, ...) case B::Name:
#define DELTA_OP(...)
#include "compiler/ir/ops.def"
    {
      Leaves x = arg(0);
      SetLoc(call->span);
      Leaves result;
      for (ir::Value* leaf : x)
        result.push_back(b.Unary(UnaryKind(builtin), leaf));
      return result;
    }
#define DELTA_MATH_OP2(Name, ...)            \
  case B::Name: {                            \
    Leaves x = arg(0);                       \
    Leaves y = arg(1);                       \
    SetLoc(call->span);                      \
    return Leafwise(ir::OpKind::Name, x, y); \
  }
#define DELTA_OP(...)
#include "compiler/ir/ops.def"
    // isnan(x) is x != x.
    case B::IsNan: {
      Leaves x = arg(0);
      SetLoc(call->span);
      Leaves result;
      for (ir::Value* leaf : x)
        result.push_back(b.Binary(ir::OpKind::Ne, leaf, leaf));
      return result;
    }
    // clamp(x, lo, hi) is min(max(x, lo), hi): NaN propagates, and the
    // derivative is x's on [lo, hi] (ties go to the first argument).
    case B::Clamp: {
      Leaves x = arg(0);
      Leaves lo = arg(1);
      Leaves hi = arg(2);
      SetLoc(call->span);
      return Leafwise(ir::OpKind::Min, Leafwise(ir::OpKind::Max, x, lo), hi);
    }
    case B::Max:
    case B::Min:
      if (call->args.size() == 2 && (!info || info->dim_args.empty())) {
        Leaves x = arg(0);
        Leaves y = arg(1);
        SetLoc(call->span);
        return Leafwise(builtin == B::Max ? ir::OpKind::Max : ir::OpKind::Min,
                        x, y);
      }
      [[fallthrough]];
    case B::Sum:
    case B::Prod:
    case B::Mean:
    case B::Argmax:
    case B::Argmin: {
      Leaves x = arg(0);
      SetLoc(call->span);
      ir::DimList dims = dims_of_call();
      // A struct reduced with no dim is one scalar over all its leaves.
      bool total = x.size() > 1 && call->type->IsLeaf();
      ir::ReduceKind kind = *ReduceKindOf(builtin);
      Leaves result;
      Leaves counts;  // of the elements reduced, for `mean`
      for (ir::Value* leaf : x) {
        ir::DimList over = dims.empty() ? leaf->type.dims : dims;
        ir::Value* reduced =
            total && over.empty() ? leaf : b.Reduce(kind, leaf, over);
        if (builtin == B::Mean) {
          // mean = sum / (product of the reduced sizes), in the leaf's type.
          ir::Value* count = b.FloatConst(leaf->type.elem, 1.0);
          for (const ir::Dim* dim : over)
            count = b.Binary(ir::OpKind::Mul, count,
                             b.Convert(b.Size(dim), leaf->type.elem));
          if (!total) reduced = b.Binary(ir::OpKind::Div, reduced, count);
          counts.push_back(count);
        }
        result.push_back(reduced);
      }
      if (!total) return result;
      ir::Value* folded = Fold(b, CombineKind(kind), result);
      if (builtin == B::Mean)
        folded =
            b.Binary(ir::OpKind::Div, folded, Fold(b, ir::OpKind::Add, counts));
      return {folded};
    }
    case B::Dot: {
      Leaves x = arg(0);
      Leaves y = arg(1);
      SetLoc(call->span);
      Leaves products = Leafwise(ir::OpKind::Mul, x, y);
      ir::DimList dims = dims_of_call();
      // Structs and tuples with no dim: their inner product, one scalar.
      bool total = products.size() > 1 && call->type->IsLeaf();
      Leaves result;
      for (ir::Value* product : products) {
        ir::DimList over = dims.empty() ? product->type.dims : dims;
        result.push_back(total && over.empty()
                             ? product
                             : b.Reduce(ir::ReduceKind::Sum, product, over));
      }
      if (!total) return result;
      return {Fold(b, ir::OpKind::Add, result)};
    }
    case B::Cumsum: {
      ir::Value* x = arg(0).front();
      SetLoc(call->span);
      return {b.Cumsum(x, dims_of_call()[0])};
    }
    case B::Reduce: {
      const sema::Type* f_type = call->args[0].value->type;
      ir::Value* init = arg(1).front();
      ir::Value* x = arg(2).front();
      SetLoc(call->span);
      const ir::Dim* dim = dims_of_call()[0];
      ir::Type element = x->type.WithDims({});
      init = b.Convert(init, element.elem, element.index_dim);
      ir::Op* op = b.Create(ir::OpKind::ReduceCustom, {init, x},
                            {x->type.WithDims(x->type.dims.Minus({dim}))});
      op->dims = {dim};
      ir::InsertionGuard guard(b);
      ir::Block* body = b.AddRegion(op, {element, element});
      b.SetInsertionBlock(body);
      const sema::Type* element_type = call->args[1].value->type;
      Leaves combined = CallUnlifted(
          Bound(f_type->callable), {{body->args[0]}, {body->args[1]}},
          {element_type, element_type}, DimSubst(), call->span);
      b.Yield(BroadcastTo(combined, {element}));
      return {op->result()};
    }
    case B::Rename: {
      Leaves x = arg(0);
      SetLoc(call->span);
      const ir::Dim* from = DimOf(info->dim_args[0]);
      const ir::Dim* to = DimOf(info->dim_args[1]);
      Leaves result;
      for (ir::Value* leaf : x)
        result.push_back(leaf->type.dims.Contains(from) && from != to
                             ? b.Rename(leaf, from, to)
                             : leaf);
      return result;
    }
    case B::Broadcast: {
      Leaves x = arg(0);
      SetLoc(call->span);
      ir::DimList dims = dims_of_call();
      Leaves result;
      for (ir::Value* leaf : x) result.push_back(b.Broadcast(leaf, dims));
      return result;
    }
    case B::Size:
      SetLoc(call->span);
      return {b.Size(dims_of_call()[0])};
    case B::ToF32:
    case B::ToF64:
    case B::ToI32:
    case B::ToI64: {
      Leaves x = arg(0);
      SetLoc(call->span);
      ir::ElemKind target = LeafType(call->type).elem;
      Leaves result;
      for (ir::Value* leaf : x)
        result.push_back(leaf->type.elem == target &&
                                 leaf->type.index_dim == nullptr
                             ? leaf
                             : b.Convert(leaf, target));
      return result;
    }
    case B::Where: {
      ir::Value* condition = arg(0).front();
      Leaves then_leaves = arg(1);
      Leaves else_leaves = arg(2);
      SetLoc(call->span);
      Leaves result;
      size_t count = std::max(then_leaves.size(), else_leaves.size());
      for (size_t i = 0; i < count; ++i) {
        // A leaf arm broadcasts over the other arm's leaves.
        ir::Value* x =
            then_leaves.size() == count ? then_leaves[i] : then_leaves.front();
        ir::Value* y =
            else_leaves.size() == count ? else_leaves[i] : else_leaves.front();
        result.push_back(b.Select(condition, x, y));
      }
      return result;
    }
    case B::StopGradient: {
      Leaves x = arg(0);
      SetLoc(call->span);
      Leaves result;
      for (ir::Value* leaf : x)
        result.push_back(ir::IsFloat(leaf->type.elem)
                             ? b.Unary(ir::OpKind::StopGradient, leaf)
                             : leaf);
      return result;
    }
    case B::Print: {
      std::vector<ir::PrintItem> items;
      std::vector<ir::Value*> values;
      // Writes a value's structure around its leaves (section 7).
      std::function<void(const sema::Type*, const Leaves&, size_t&)> format =
          [&](const sema::Type* type, const Leaves& leaves, size_t& next) {
            switch (type->kind) {
              case sema::Type::Kind::Tuple:
                AddText(items, "(");
                for (size_t i = 0; i < type->elements.size(); ++i) {
                  if (i) AddText(items, ", ");
                  format(type->elements[i], leaves, next);
                }
                AddText(items, type->elements.size() == 1 ? ",)" : ")");
                return;
              case sema::Type::Kind::Struct: {
                const sema::StructInfo* info = type->struct_info;
                AddText(items, info->decl->name.name.str() + " { ");
                for (size_t i = 0; i < info->field_names.size(); ++i) {
                  if (i) AddText(items, ", ");
                  AddText(items, info->field_names[i].str() + ": ");
                  format(info->field_types[i], leaves, next);
                }
                AddText(items, " }");
                return;
              }
              case sema::Type::Kind::Function:
              case sema::Type::Kind::Error:
                AddText(items, "<function>");
                return;
              default:
                if (next < leaves.size()) {
                  items.push_back({true, ""});
                  values.push_back(leaves[next++]);
                }
                return;
            }
          };
      for (size_t i = 0; i < call->args.size(); ++i) {
        if (i) AddText(items, " ");
        const ast::Expr* value = call->args[i].value;
        if (auto* text = llvm::dyn_cast<ast::StringLitExpr>(value)) {
          AddText(items, text->value);
          continue;
        }
        Leaves leaves = Expr(value);
        size_t next = 0;
        format(value->type, leaves, next);
      }
      SetLoc(call->span);
      ir::Op* op = b.Create(ir::OpKind::Print, values, {});
      op->print_items = std::move(items);
      return {};
    }
    case B::ReadNpy:
    case B::WriteNpy: {
      // The dims in the file's axis order (dim_args keeps the written order).
      std::vector<const ir::Dim*> dims;
      if (info)
        for (const sema::DimInfo* dim : info->dim_args)
          dims.push_back(DimOf(dim));
      // A literal, or main's `path` parameter: Note [Path arguments].
      ir::PrintItem path;
      if (auto* name = llvm::dyn_cast<ast::NameExpr>(call->args[0].value))
        path = {true, std::to_string(name->symbol->path_arg)};
      else
        path = {false,
                llvm::cast<ast::StringLitExpr>(call->args[0].value)->value};
      if (builtin == B::ReadNpy) {
        SetLoc(call->span);
        ir::Type type = LeafType(call->type);
        ir::Op* op = b.Create(ir::OpKind::ReadNpy, {}, {type});
        op->dims = std::move(dims);
        op->print_items = {path};
        return {op->result()};
      }
      ir::Value* x = arg(1).front();
      SetLoc(call->span);
      ir::Op* op = b.Create(ir::OpKind::WriteNpy, {x}, {});
      op->dims = std::move(dims);
      op->print_items = {path};
      return {};
    }
    case B::Grad:
    case B::ValueAndGrad:
    case B::Vmap:
    case B::Checkpoint:
      // Function values are compile-time; the call of one is lowered.
      return {};
    case B::Jvp:
    case B::Vjp:
      return TransformBuiltin(call, builtin);
  }
  return {};
}

}  // namespace delta::lower
