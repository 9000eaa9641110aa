// Note [Reusing map results]
// Fusion copies a producer's body into each consumer that reads it at its
// points, so that the producer's values stay in registers. When the
// producer also has a reader that fusion cannot take in (a reduction over
// one of its dims), it is stored anyway, and the copies compute it again.
// GMM's gradient stores exp(logit - max) over [n, comp] for the
// log-sum-exp, and its map over [n, comp, d] for the means' adjoint
// computed the same exp again: at d = 2, K = 10 each exp is a libm call,
// and the gradient took 3x the objective's time. This pass gives every
// expression in a map's body a structural key (op kinds, result types,
// values from outside the body, and the body's indices by their dims),
// and replaces an expression whose key is that of a value an earlier map
// of the block yields by a read of the stored result at the body's point.
// Only expressions that call a math function are replaced (a load costs
// more than an add), and only results that something else already reads
// (otherwise the result would be stored just for this). See Note [Keys as
// numbers] for how keys stay small.
#include "compiler/transforms/opt/reuse_map_results.h"

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/DenseSet.h>
#include <llvm/ADT/StringMap.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/rewrite.h"

namespace delta::opt {
namespace {

using ir::Op;
using ir::OpKind;
using ir::Value;

std::string Pointer(const void* pointer) {
  return std::to_string(reinterpret_cast<uintptr_t>(pointer));
}

// Whether an op's value is its kind, result type and operands alone.
bool IsKeyed(const Op& op) {
  return op.regions.empty() && op.results.size() == 1 &&
         op.results[0]->type.IsScalar() &&
         (ir::IsElementwise(op.kind) || op.kind == OpKind::Gather) &&
         !transforms::HasEffects(op);
}

// Note [Keys as numbers]: a key is a number that stands for one
// expression. Its text names the op and its operands by their numbers, so
// it is as long as the op, not its expression tree; spelling out the whole
// tree made keys grow with its depth and took 1.8 GB and 2.3 s on GradBench
// ba.
using Key = uint32_t;
constexpr Key kNoKey = 0;

class KeyTable {
 public:
  KeyTable() : calls_math_(1, false) {}
  Key Intern(const std::string& text, bool calls_math) {
    auto [it, inserted] =
        keys_.try_emplace(text, static_cast<Key>(calls_math_.size()));
    if (inserted) calls_math_.push_back(calls_math);
    return it->second;
  }
  // Whether the expression calls a math function.
  bool CallsMath(Key key) const { return calls_math_[key]; }

 private:
  llvm::StringMap<Key> keys_;
  std::vector<bool> calls_math_;
};

// Structural keys of the values of one map body.
class BodyKeys {
 public:
  // `stored_keys`: the keys of earlier maps' results (a point read of one
  // has the key of what it read, so that a copy of a map's body and a
  // read of its result compare equal).
  BodyKeys(const Op& map, const llvm::DenseMap<const Value*, Key>& stored_keys,
           KeyTable& table)
      : map_(map), stored_keys_(stored_keys), table_(table) {
    const ir::Block& body = *map.region(0);
    for (size_t k = 0; k < body.args.size(); ++k)
      keys_[body.args[k]] = table_.Intern("i:" + Pointer(map.dims[k]), false);
  }

  // The key of `value`, or kNoKey if it has none (an op that is not keyed).
  Key Of(const Value* value) {
    auto it = keys_.find(value);
    if (it != keys_.end()) return it->second;
    const ir::Block& body = *map_.region(0);
    Key key = kNoKey;
    if (value->def == nullptr || value->def->parent != &body) {
      // From outside the body: itself.
      key = table_.Intern("v:" + Pointer(value), false);
    } else if (const Key* read = PointReadKey(*value->def)) {
      key = *read;
    } else if (value->def->kind == OpKind::Const) {
      const Op& op = *value->def;
      key = table_.Intern(
          "c:" + ir::TypeString(value->type) + ":" +
              std::to_string(ir::IsFloat(value->type.elem)
                                 ? std::bit_cast<uint64_t>(op.float_value)
                                 : static_cast<uint64_t>(op.int_value)),
          false);
    } else if (IsKeyed(*value->def)) {
      const Op& op = *value->def;
      std::string text = ir::OpMnemonic(op.kind).str() + ":" +
                         ir::TypeString(op.results[0]->type) + "(";
      bool calls_math = ir::HasFlag(op.kind, ir::kMathCall);
      bool keyed = true;
      for (const Value* operand : op.operands) {
        Key inner = Of(operand);
        if (inner == kNoKey) {
          keyed = false;
          break;
        }
        text += std::to_string(inner) + ",";
        calls_math |= table_.CallsMath(inner);
      }
      if (keyed) key = table_.Intern(text + ")", calls_math);
    }
    keys_[value] = key;
    return key;
  }

 private:
  // The key of an earlier map's result if `op` reads it at this body's
  // point (its indices are the body's, dim for dim), else null.
  const Key* PointReadKey(const Op& op) const {
    if (op.kind != OpKind::Gather) return nullptr;
    auto it = stored_keys_.find(op.operands[0]);
    if (it == stored_keys_.end()) return nullptr;
    const ir::DimList& dims = op.operands[0]->type.dims;
    const ir::Block& body = *map_.region(0);
    if (op.operands.size() != dims.size() + 1) return nullptr;
    for (size_t k = 0; k < dims.size(); ++k) {
      const Value* index = op.operands[k + 1];
      auto arg = std::find(body.args.begin(), body.args.end(), index);
      if (arg == body.args.end() ||
          map_.dims[arg - body.args.begin()] != dims[k])
        return nullptr;
    }
    return &it->second;
  }

  const Op& map_;
  const llvm::DenseMap<const Value*, Key>& stored_keys_;
  KeyTable& table_;
  llvm::DenseMap<const Value*, Key> keys_;
};

class Reuser {
 public:
  explicit Reuser(ir::Function& function) : builder_(&function) {
    transforms::WalkOps(*function.body, [&](const Op& op) {
      for (const Value* operand : op.operands) used_.insert(operand);
    });
  }

  bool changed() const { return changed_; }

  void Block(ir::Block& block) {
    // What the maps seen so far store: key -> (result, the map's dims).
    struct Stored {
      Value* result;
      ir::DimList dims;
    };
    llvm::DenseMap<Key, Stored> stored;
    llvm::DenseMap<const Value*, Key> stored_keys;
    for (auto& owned : block.ops) {
      Op& op = *owned;
      for (auto& region : op.regions) Block(*region);
      if (!transforms::IsScalarMap(op)) continue;
      ir::DimList dims(op.dims);
      BodyKeys keys(op, stored_keys, table_);
      ir::Block& body = *op.region(0);
      llvm::DenseMap<Value*, Value*> replacements;
      for (size_t i = 0; i < body.ops.size(); ++i) {
        Op& inner = *body.ops[i];
        if (inner.kind == OpKind::Yield || inner.results.size() != 1) continue;
        Key key = keys.Of(inner.results[0]);
        if (key == kNoKey || !table_.CallsMath(key)) continue;
        auto it = stored.find(key);
        if (it == stored.end() || !dims.ContainsAll(it->second.dims)) continue;
        // A read of the stored result at this body's point.
        std::vector<Value*> at;
        for (const ir::Dim* dim : it->second.dims)
          at.push_back(body.args[dims.IndexOf(dim)]);
        Value* read = nullptr;
        builder_.SetLoc(inner.loc);
        i += transforms::InsertAt(builder_, body, i, [&] {
          read = builder_.Gather(it->second.result, at);
        });
        replacements[inner.results[0]] = read;
      }
      if (!replacements.empty()) {
        // The replaced values are the body's own: nothing outside uses them.
        transforms::ReplaceUses(body, replacements);
        changed_ = true;
      }
      // This map's stored results, for the maps after it.
      const Op* yield = body.terminator();
      for (size_t k = 0; k < op.results.size(); ++k) {
        Key key = keys.Of(yield->operands[k]);
        if (key == kNoKey) continue;
        stored_keys[op.results[k]] = key;
        if (used_.contains(op.results[k]))
          stored.try_emplace(key, Stored{op.results[k], dims});
      }
    }
  }

 private:
  ir::Builder builder_;
  KeyTable table_;
  llvm::DenseSet<const Value*> used_;
  bool changed_ = false;
};

}  // namespace

bool ReuseMapResults(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions) {
    Reuser reuser(*function);
    reuser.Block(*function->body);
    changed |= reuser.changed();
  }
  return changed;
}

}  // namespace delta::opt
