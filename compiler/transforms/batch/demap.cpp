// Demap: each map rewritten as its body over the map's dims (demap.h and
// docs/internals/ad.md, "Batching").
#include "compiler/transforms/batch/demap.h"

#include <llvm/ADT/DenseMap.h>

#include <optional>
#include <string>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/transforms/batch/batch_emitter.h"
#include "compiler/transforms/batch/batched_values.h"
#include "compiler/transforms/opt/inline_calls.h"
#include "compiler/transforms/rewrite.h"

namespace delta::batch {
namespace {

using ir::OpKind;
using ir::Type;
using ir::Value;

// Inlining calls with batched arguments may reach a call cycle; past this
// many inlined calls in one map, the map stays a map.
constexpr int kMaxInlinedCalls = 256;

bool HasBody(const ir::Function& function) {
  const ir::Op* last = function.body->terminator();
  return last && last->kind == OpKind::Return;
}

// A name that no dim of `function` has yet, as the inliner makes them.
std::string FreshDimName(const ir::Function& function,
                         const std::string& name) {
  auto taken = [&](const std::string& candidate) {
    for (const ir::Dim* dim : function.dims)
      if (dim->name == candidate) return true;
    return false;
  };
  for (int i = 1;; ++i)
    if (!taken(name + "." + std::to_string(i)))
      return name + "." + std::to_string(i);
}

class Demapper {
 public:
  explicit Demapper(ir::Function& function) : function_(function) {}

  // Demaps the maps of `block` and of the regions in it, innermost first.
  void Block(ir::Block& block);
  bool changed() const { return changed_; }

 private:
  // Replaces `map` by its batched body; returns how many ops took its
  // place, or nothing if it stays a map.
  std::optional<size_t> Map(ir::Op& map);
  size_t Rewrite(ir::Op& map, const BatchedValues& batched);
  bool CanInline(const ir::Op& call) const {
    return call.callee && call.callee != &function_ && HasBody(*call.callee);
  }

  ir::Function& function_;
  bool changed_ = false;
};

void Demapper::Block(ir::Block& block) {
  for (size_t i = 0; i < block.ops.size();) {
    ir::Op& op = *block.ops[i];
    for (auto& region : op.regions) Block(*region);
    if (op.kind == OpKind::Map) {
      if (std::optional<size_t> count = Map(op)) {
        changed_ = true;
        i += *count;  // the new ops hold no map that could still go
        continue;
      }
    }
    ++i;
  }
}

std::optional<size_t> Demapper::Map(ir::Op& map) {
  for (int inlined = 0;; ++inlined) {
    BatchedValues batched(map);
    if (!batched.blocker().empty()) return std::nullopt;
    ir::Op* call = batched.batched_call();
    if (!call) return Rewrite(map, batched);
    if (inlined == kMaxInlinedCalls || !CanInline(*call)) return std::nullopt;
    opt::InlineCall(function_, *call);
    changed_ = true;
    Block(*map.regions[0]);  // the maps the callee brought
  }
}

size_t Demapper::Rewrite(ir::Op& map, const BatchedValues& batched) {
  ir::Builder builder(&function_);
  builder.SetLoc(map.loc);
  const ir::Block& body = *map.regions[0];
  ir::DimList map_dims(map.dims);
  std::vector<Value*> results;
  size_t count =
      transforms::InsertAt(builder, *map.parent, transforms::IndexOf(map), [&] {
        // The lanes are the map's dims unless a lane already has one of
        // them (BatchedValues::collides); then fresh dims of the same sizes
        // stand for them until the results are renamed back.
        std::vector<const ir::Dim*> lanes;
        LaneDims lane_dims;
        for (const ir::Dim* dim : map.dims) {
          if (!batched.collides()) {
            lanes.push_back(dim);
            lane_dims[dim] = dim;
            continue;
          }
          ir::Dim* fresh =
              function_.CopyDim(*dim, FreshDimName(function_, dim->name));
          if (!dim->constant) builder.DimDef(fresh, builder.Size(dim));
          lanes.push_back(fresh);
          lane_dims[dim] = fresh;
        }
        BatchEmitter emitter(builder, batched, lane_dims);
        for (size_t k = 0; k < lanes.size(); ++k) {
          Value* index = builder.Iota(map.dims[k]);
          if (lanes[k] != map.dims[k])
            index = builder.Rename(index, map.dims[k], lanes[k]);
          emitter.Bind(body.args[k], index);
        }
        emitter.Block(body);
        builder.SetLoc(map.loc);
        for (Value* value : emitter.Yielded(body)) {
          for (size_t k = 0; k < lanes.size(); ++k)
            if (lanes[k] != map.dims[k] && value->type.dims.Contains(lanes[k]))
              value = builder.Rename(value, lanes[k], map.dims[k]);
          // A result that is the same in every lane is broadcast.
          results.push_back(
              builder.Broadcast(value, map_dims.Minus(value->type.dims)));
        }
        // Local dims declared in the body are now declared outside it.
        for (ir::Dim* dim : function_.dims)
          if (dim->size) dim->size = emitter.Get(dim->size);
      });
  llvm::DenseMap<Value*, Value*> replacements;
  for (size_t j = 0; j < map.results.size(); ++j) {
    if (results[j]->name.empty()) results[j]->name = map.results[j]->name;
    replacements[map.results[j]] = results[j];
  }
  transforms::ReplaceUses(function_, replacements);
  transforms::EraseOp(map);
  return count;
}

}  // namespace

bool DemapFunction(ir::Function& function) {
  Demapper demapper(function);
  demapper.Block(*function.body);
  return demapper.changed();
}

bool Demap(ir::Module& module) {
  bool changed = false;
  for (auto& function : module.functions)
    if (HasBody(*function)) changed |= DemapFunction(*function);
  return changed;
}

}  // namespace delta::batch
