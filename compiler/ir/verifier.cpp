// The IR verifier: scoping of values (SSA dominance in structured regions),
// terminators, and the typing rule of every op.
#include "compiler/ir/verifier.h"

#include <llvm/ADT/DenseSet.h>

#include "compiler/ir/builder.h"

namespace delta::ir {
namespace {

class Verifier {
 public:
  std::vector<std::string> errors;

  void Function(const ir::Function& function) {
    function_ = &function;
    available_.clear();
    own_dims_.clear();
    own_dims_.insert(function.dims.begin(), function.dims.end());
    if (function.module)
      for (const auto& dim : function.module->dims) own_dims_.insert(dim.get());
    for (const Value* value : function.size_params) available_.insert(value);
    for (const Value* value : function.params) available_.insert(value);
    if (function.size_params.size() > function.dims.size())
      Fail("has more size parameters than dims");
    Block(*function.body, /*is_body=*/true);
    const Op* last = function.body->terminator();
    if (!last || last->kind != OpKind::Return) {
      Fail("body does not end with return");
    } else if (last->operands.size() != function.result_types.size()) {
      Fail("returns " + std::to_string(last->operands.size()) +
           " values, declared " + std::to_string(function.result_types.size()));
    } else {
      for (size_t i = 0; i < last->operands.size(); ++i)
        if (last->operands[i]->type != function.result_types[i])
          Fail("returns " + TypeString(last->operands[i]->type) +
               " where the result type is " +
               TypeString(function.result_types[i]));
    }
  }

 private:
  void Fail(const std::string& message, const Op* op = nullptr) {
    std::string where = "@" + function_->name;
    if (op) where += ": " + OpMnemonic(op->kind).str();
    errors.push_back(where + ": " + message);
  }

  // Checks the ops of a block; values defined in it go out of scope after.
  void Block(const ir::Block& block, bool is_body) {
    std::vector<const Value*> defined(block.args.begin(), block.args.end());
    for (const Value* arg : block.args) available_.insert(arg);
    for (size_t i = 0; i < block.ops.size(); ++i) {
      const ir::Op& op = *block.ops[i];
      bool last = i + 1 == block.ops.size();
      bool terminator = op.kind == OpKind::Yield || op.kind == OpKind::Return;
      if (terminator != last)
        Fail(terminator ? "terminator in the middle of a block"
                        : "block does not end with a terminator",
             &op);
      if (op.kind == OpKind::Return && !is_body)
        Fail("return inside a region", &op);
      if (op.kind == OpKind::Yield && is_body)
        Fail("yield in a function body", &op);
      if (op.parent != &block) Fail("op's parent is not its block", &op);
      for (const Value* operand : op.operands)
        if (!available_.contains(operand))
          Fail("uses a value that is not defined before it", &op);
      for (const auto& region : op.regions) Block(*region, false);
      CheckDims(op);
      CheckOp(op);
      for (const Value* result : op.results) {
        available_.insert(result);
        defined.push_back(result);
      }
    }
    for (const Value* value : defined) available_.erase(value);
  }

  // Every dim an op names or types with is the function's or the module's:
  // a dim of another function dies with it. Only pointers are compared, so
  // a dangling dim is reported, not read.
  void CheckDims(const ir::Op& op) {
    auto owned = [&](const ir::Type& type) {
      if (type.index_dim && !own_dims_.contains(type.index_dim)) return false;
      return llvm::all_of(
          type.dims, [&](const Dim* dim) { return own_dims_.contains(dim); });
    };
    bool ok = llvm::all_of(
        op.dims, [&](const Dim* dim) { return own_dims_.contains(dim); });
    for (const Value* result : op.results) ok = ok && owned(result->type);
    for (const auto& region : op.regions)
      for (const Value* arg : region->args) ok = ok && owned(arg->type);
    if (!ok) Fail("uses a dim of another function", &op);
  }

  const Op* Yield(const ir::Block& region) {
    const ir::Op* last = region.terminator();
    return last && last->kind == OpKind::Yield ? last : nullptr;
  }

  void ExpectType(const ir::Op& op, const Type& actual, const Type& expected,
                  const char* what) {
    if (actual != expected)
      Fail(std::string(what) + " has type " + TypeString(actual) +
               ", expected " + TypeString(expected),
           &op);
  }

  void CheckOp(const ir::Op& op) {
    auto count = [&](size_t operands, size_t results, size_t regions) {
      if (op.operands.size() != operands || op.results.size() != results ||
          op.regions.size() != regions) {
        Fail("wrong number of operands, results or regions", &op);
        return false;
      }
      return true;
    };
    if (IsElementwiseUnary(op.kind)) {
      if (!count(1, 1, 0)) return;
      const Type& x = op.operands[0]->type;
      const Type& r = op.results[0]->type;
      if (r.dims != x.dims) Fail("changes dims", &op);
      if (op.kind == OpKind::Not && x.elem != ElemKind::Bool)
        Fail("needs a bool", &op);
      if (op.kind != OpKind::Convert && op.kind != OpKind::Not &&
          r.elem != x.elem)
        Fail("changes the element type", &op);
      return;
    }
    if (IsElementwiseBinary(op.kind)) {
      if (!count(2, 1, 0)) return;
      const Type& a = op.operands[0]->type;
      const Type& b = op.operands[1]->type;
      const Type& r = op.results[0]->type;
      if (a.elem != b.elem || a.index_dim != b.index_dim)
        Fail("operands " + TypeString(a) + " and " + TypeString(b) +
                 " differ in element type",
             &op);
      if (r.dims != a.dims.Union(b.dims))
        Fail("result dims are not the union of the operands'", &op);
      bool boolean = HasFlag(op.kind, kCompare) || op.kind == OpKind::And ||
                     op.kind == OpKind::Or;
      if (boolean && r.elem != ElemKind::Bool)
        Fail("a comparison gives bool", &op);
      if (!boolean && r.elem != a.elem) Fail("changes the element type", &op);
      return;
    }
    switch (op.kind) {
      case OpKind::Const:
        if (count(0, 1, 0) && !op.results[0]->type.IsScalar())
          Fail("a constant is a scalar", &op);
        return;
      case OpKind::Size:
      case OpKind::ShardOffset:
        if (count(0, 1, 0) && op.dims.size() != 1) Fail("needs one dim", &op);
        return;
      case OpKind::Allreduce:
      case OpKind::Exscan:
        if (count(1, 1, 0))
          ExpectType(op, op.results[0]->type, op.operands[0]->type, "result");
        return;
      case OpKind::Select: {
        if (!count(3, 1, 0)) return;
        const Type& c = op.operands[0]->type;
        if (c.elem != ElemKind::Bool) Fail("condition is not bool", &op);
        DimList dims = c.dims.Union(op.operands[1]->type.dims)
                           .Union(op.operands[2]->type.dims);
        if (op.results[0]->type.dims != dims)
          Fail("result dims are not the union of the operands'", &op);
        return;
      }
      case OpKind::Map: {
        if (op.regions.size() != 1 || !op.operands.empty()) {
          Fail("a map has one region and no operands", &op);
          return;
        }
        const ir::Block& body = *op.regions[0];
        if (body.args.size() != op.dims.size()) {
          Fail("region needs one index argument per dim", &op);
          return;
        }
        DimList dims;
        for (size_t i = 0; i < op.dims.size(); ++i) {
          dims.Insert(op.dims[i]);
          const Type& arg = body.args[i]->type;
          if (arg.elem != ElemKind::Index || arg.index_dim != op.dims[i] ||
              !arg.IsScalar())
            Fail("argument " + std::to_string(i) + " must be an index of " +
                     op.dims[i]->name,
                 &op);
        }
        const ir::Op* yield = Yield(body);
        if (!yield || yield->operands.size() != op.results.size()) {
          Fail("region must yield one value per result", &op);
          return;
        }
        for (size_t i = 0; i < op.results.size(); ++i) {
          const Type& y = yield->operands[i]->type;
          for (const ir::Dim* dim : op.dims)
            if (y.dims.Contains(dim))
              Fail("yields a value that already has dim " + dim->name, &op);
          ExpectType(op, op.results[i]->type, y.WithDims(y.dims.Union(dims)),
                     "result");
        }
        return;
      }
      case OpKind::Reduce: {
        if (op.results.size() != 1) {
          Fail("a reduce has one result", &op);
          return;
        }
        DimList reduced(op.dims);
        if (op.regions.empty()) {
          if (!count(1, 1, 0)) return;
          const Type& x = op.operands[0]->type;
          if (!x.dims.ContainsAll(reduced)) Fail("reduces a missing dim", &op);
          if (op.results[0]->type.dims != x.dims.Minus(reduced))
            Fail("result dims are the operand's minus the reduced", &op);
          return;
        }
        if (!count(0, 1, 1)) return;
        const ir::Block& body = *op.regions[0];
        DimList all = op.results[0]->type.dims.Union(reduced);
        if (body.args.size() != all.size()) {
          Fail("fused reduce needs one index argument per dim", &op);
          return;
        }
        for (size_t i = 0; i < all.size(); ++i)
          if (body.args[i]->type.index_dim != all[i])
            Fail("fused reduce arguments are indices in canonical order", &op);
        const ir::Op* yield = Yield(body);
        if (!yield || yield->operands.size() != 1 ||
            !yield->operands[0]->type.IsScalar())
          Fail("fused reduce region yields one scalar", &op);
        return;
      }
      case OpKind::Loop: {
        if (op.regions.size() != 1 || op.operands.size() < 2) {
          Fail("a loop has bounds, state and one region", &op);
          return;
        }
        size_t state = op.operands.size() - 2;
        const ir::Block& body = *op.regions[0];
        const ir::Op* yield = Yield(body);
        if (body.args.size() != state + 1 || !yield ||
            yield->operands.size() != op.results.size() ||
            op.results.size() < state) {
          Fail("loop state does not match its region and results", &op);
          return;
        }
        if (op.results.size() > state && op.dims.empty()) {
          Fail("only a loop over a dim can stack outputs", &op);
          return;
        }
        for (size_t i = 0; i < state; ++i) {
          ExpectType(op, body.args[i + 1]->type, op.operands[i + 2]->type,
                     "state argument");
          ExpectType(op, yield->operands[i]->type, op.operands[i + 2]->type,
                     "yielded state");
          ExpectType(op, op.results[i]->type, op.operands[i + 2]->type,
                     "result");
        }
        for (size_t i = state; i < op.results.size(); ++i) {
          const Type& output = yield->operands[i]->type;
          if (output.dims.Contains(op.dims[0]))
            Fail("a stacked output already has the loop's dim", &op);
          ExpectType(op, op.results[i]->type,
                     output.WithDims(output.dims.Union({op.dims[0]})),
                     "stacked output");
        }
        return;
      }
      case OpKind::ScatterAdd: {
        if (op.operands.size() < 2 || op.results.size() != 1) {
          Fail("a scatter_add has values, indices and one result", &op);
          return;
        }
        DimList target = op.operands[0]->type.dims;
        for (size_t i = 1; i < op.operands.size(); ++i) {
          const Type& index = op.operands[i]->type;
          if (index.elem != ElemKind::Index) {
            Fail("scatter_add indices must be index arrays", &op);
            return;
          }
          target = target.Minus(index.dims);
        }
        for (size_t i = 1; i < op.operands.size(); ++i)
          target.Insert(op.operands[i]->type.index_dim);
        if (!op.results[0]->type.dims.ContainsAll(target))
          Fail("scatter_add result lacks a target dim", &op);
        return;
      }
      case OpKind::While: {
        if (op.regions.size() != 2 || op.results.size() != op.operands.size()) {
          Fail("a while has state, a condition and a body", &op);
          return;
        }
        const ir::Op* cond = Yield(*op.regions[0]);
        if (!cond || cond->operands.size() != 1 ||
            cond->operands[0]->type.elem != ElemKind::Bool ||
            !cond->operands[0]->type.IsScalar())
          Fail("condition region must yield a scalar bool", &op);
        const ir::Op* body = Yield(*op.regions[1]);
        if (!body || body->operands.size() != op.operands.size()) {
          Fail("body must yield the state", &op);
          return;
        }
        for (size_t i = 0; i < op.operands.size(); ++i)
          ExpectType(op, body->operands[i]->type, op.operands[i]->type,
                     "yielded state");
        return;
      }
      case OpKind::If: {
        if (op.regions.size() != 2 || op.operands.size() != 1) {
          Fail("an if has a condition and two regions", &op);
          return;
        }
        const Type& c = op.operands[0]->type;
        if (c.elem != ElemKind::Bool || !c.IsScalar())
          Fail("condition must be a scalar bool", &op);
        for (const auto& region : op.regions) {
          const ir::Op* yield = Yield(*region);
          if (!yield || yield->operands.size() != op.results.size()) {
            Fail("each branch yields one value per result", &op);
            return;
          }
          for (size_t i = 0; i < op.results.size(); ++i)
            ExpectType(op, yield->operands[i]->type, op.results[i]->type,
                       "branch value");
        }
        return;
      }
      case OpKind::Call:
        if (!op.callee) {
          Fail("call without a callee", &op);
        } else if (op.operands.size() != op.callee->params.size() ||
                   op.results.size() != op.callee->result_types.size() ||
                   op.dims.size() != op.callee->size_params.size()) {
          Fail("call of @" + op.callee->name + " does not match its signature",
               &op);
        }
        return;
      case OpKind::Gather:
        if (op.operands.empty() || op.results.size() != 1) {
          Fail("a gather has an array and indices", &op);
          return;
        }
        for (size_t i = 1; i < op.operands.size(); ++i)
          if (op.operands[i]->type.elem != ElemKind::Index)
            Fail("gather indices must be index arrays", &op);
        return;
      default:
        return;
    }
  }

  const ir::Function* function_ = nullptr;
  llvm::DenseSet<const Value*> available_;
  llvm::DenseSet<const Dim*> own_dims_;
};

}  // namespace

std::vector<std::string> Verify(const Module& module) {
  Verifier verifier;
  for (const auto& function : module.functions) verifier.Function(*function);
  return verifier.errors;
}

}  // namespace delta::ir
