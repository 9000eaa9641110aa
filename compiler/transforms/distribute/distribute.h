// Distribute: a module with a sharded dim (`@shard dim`) made into the
// program that each process of a sharded run executes on its block of that
// dim (docs/internals/distribute.md).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/ir.h"

namespace delta::distribute {

// An op that cannot run on blocks yet: it needs data another process holds.
struct Problem {
  ir::Loc loc;
  std::string message;
};

// Inlines every call and removes maps (so that the rules below see every
// op), then completes each operation over a sharded dim with a collective:
// a reduction over it with an allreduce, cumsum with an exclusive scan of
// the block totals, a conversion of its index to a number with the block's
// offset. Finally a sharded dim's constant size becomes its global size, so
// that code generators take the block's extent from the runtime. Returns
// the ops it cannot rewrite (the module is then not to be run); a module
// without a sharded dim is left as it is.
std::vector<Problem> Distribute(ir::Module& module);

}  // namespace delta::distribute
