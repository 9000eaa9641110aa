// Small tools that passes share to edit the IR in place: walking ops,
// counting users, replacing values, inserting, erasing and cloning ops.
#pragma once

#include <llvm/ADT/DenseMap.h>
#include <llvm/ADT/STLFunctionalExtras.h>

#include <cstddef>
#include <vector>

#include "compiler/ir/builder.h"
#include "compiler/ir/ir.h"

namespace delta::transforms {

// Calls `visit` on every op of `block` and of the regions nested in it, each
// op before the ops of its regions.
void WalkOps(ir::Block& block, llvm::function_ref<void(ir::Op&)> visit);
void WalkOps(const ir::Block& block,
             llvm::function_ref<void(const ir::Op&)> visit);

// For each value, how many ops use it (an op using a value twice counts
// once), over a whole function including nested regions.
using UserCounts = llvm::DenseMap<const ir::Value*, unsigned>;
UserCounts CountUsers(ir::Function& function);

// Makes every use of a key of `replacements` in `function` (operands and
// the sizes of the function's dims) a use of its value.
void ReplaceUses(ir::Function& function,
                 const llvm::DenseMap<ir::Value*, ir::Value*>& replacements);
void ReplaceAllUses(ir::Function& function, ir::Value* from, ir::Value* to);
// The same within `block` and its regions only, for values that nothing
// outside it can see (those defined in it): its cost is the block's size,
// not the function's.
void ReplaceUses(ir::Block& block,
                 const llvm::DenseMap<ir::Value*, ir::Value*>& replacements);

// The position of `op` in its parent block.
size_t IndexOf(const ir::Op& op);

// Removes `op` (and its regions) from its block; its results must be unused.
void EraseOp(ir::Op& op);

// Runs `build` with `builder` appending to a scratch block, then moves the
// ops it made into `block` before position `index`; returns how many.
size_t InsertAt(ir::Builder& builder, ir::Block& block, size_t index,
                llvm::function_ref<void()> build);

// Replaces each of `ops` (each with one result) by the value `build(op)`
// emits with `builder` just before it, then erases them; `ops` must not
// nest. Returns whether there was any.
bool ReplaceEach(ir::Function& function, const std::vector<ir::Op*>& ops,
                 llvm::function_ref<ir::Value*(ir::Builder&, ir::Op&)> build);

// Runs `pass` on every function of `module`; returns whether any changed.
bool ForEachFunction(ir::Module& module,
                     llvm::function_ref<bool(ir::Function&)> pass);

// What a clone maps: values and dims of the original to those of the copy.
// Anything not in the maps stays itself (values from enclosing scopes).
struct CloneMap {
  llvm::DenseMap<const ir::Value*, ir::Value*> values;
  llvm::DenseMap<const ir::Dim*, const ir::Dim*> dims;

  ir::Value* Lookup(ir::Value* value) const;
  const ir::Dim* Lookup(const ir::Dim* dim) const;
  ir::Type Lookup(const ir::Type& type) const;
};

// Clones `op` with its regions at the builder's insertion point, mapping
// operands, types and dims through `map`, and records its results in `map`.
ir::Op* CloneOp(ir::Builder& builder, const ir::Op& op, CloneMap& map);

// Whether `op` itself may do something besides computing its results:
// print, fail at run time (to_index, integer div/rem, rename, dim, a
// conversion to an index), run forever (while), or whatever a call does.
// The ops in its regions are not looked at; see HasEffectsDeep.
bool HasEffects(const ir::Op& op);
// HasEffects of `op` or of any op nested in its regions.
bool HasEffectsDeep(const ir::Op& op);
// Whether `op`'s only effect is that it may fail at run time (a range or
// size check, an integer division by zero): moving it changes at most
// which failure is reported first.
bool MayOnlyFail(const ir::Op& op);

// Whether `op` is a map whose body is scalar ops without regions, with no
// effect but run-time checks, and yields scalars (fuse-maps' members).
bool IsScalarMap(const ir::Op& op);

}  // namespace delta::transforms
