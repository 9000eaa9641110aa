// Note [Physical layout]: the language fixes no order of an array's dims;
// the compiler lays arrays out row-major in canonical order, except that at
// -O3 one dim may be moved innermost and one outermost (after the tapes'
// steps) in every array of the module, and loop nests follow.
// ChoosePhysicalLayout picks them from the contractions: GMM's y[n, comp,
// d] = sum(factor[comp, d, e] * centred[n, comp, e], e) has C's innermost
// dim d (10 wide) as the kernel's columns, so each product is 1000 x 10 x
// 10 run in 16-column tiles; with n innermost it is 10 x 1000 x 10, the
// kernel's columns are the 1000 points and its stores are whole vectors.
// With the batch dim comp outermost, each component's operands are
// contiguous. Function signatures stay canonical (callers, the C ABI, the
// interpreter and printing see canonical arrays): parameters, call
// arguments and results are converted at the boundary, which costs a copy
// of the arrays whose order differs. See docs/internals/codegen.md.
#include "compiler/codegen/llvm/emitter.h"
#include "compiler/transforms/rewrite.h"

namespace delta::codegen {
namespace {

// The product of the known sizes of `dims` (unknown sizes count as 1).
double KnownElements(const ir::DimList& dims) {
  double elements = 1;
  for (const ir::Dim* dim : dims)
    if (dim->constant) elements *= static_cast<double>(*dim->constant);
  return elements;
}

// Of all the module's contraction work, the share that must gain before a
// dim is moved: moving one changes every array's layout, so a few small
// products (the MLP's 10-class layer) do not decide it.
constexpr double kMinVotingShare = 0.5;

// The dim of `votes` with the most work, if that is at least
// kMinVotingShare of `total`.
const ir::Dim* Winner(const llvm::DenseMap<const ir::Dim*, double>& votes,
                      double total) {
  const ir::Dim* best = nullptr;
  double best_votes = 0;
  for (const auto& [dim, work] : votes)
    if (work > best_votes ||
        (work == best_votes && best != nullptr && dim->order < best->order)) {
      best = dim;
      best_votes = work;
    }
  if (best == nullptr || best_votes < kMinVotingShare * total) return nullptr;
  return best;
}

// Whether `dim` comes first in `dims` after the tapes' step dims (which
// stay outermost, so that each step's slice is contiguous).
bool FirstOrdinary(const ir::DimList& dims, const ir::Dim* dim) {
  for (const ir::Dim* candidate : dims)
    if (candidate->order >= 0) return candidate == dim;
  return false;
}

// Note [Small dims outermost]: a map over [obs, comp] with comp = 2
// innermost (BA's reverse pass, lifted over the residual's components)
// stores and loads every array with a stride of 2, which the vectorizer
// turns into shuffles or single-element stores, and the maps that read
// them one comp at a time read every cache line twice. With comp
// outermost each comp is a contiguous row; code generation unrolls the
// small dim inside the loop over the rest (UnrolledMapDims), so the
// values its copies share are still computed once. The maps vote with
// their points times their body's length; a dim wins with at least half
// of the votes. Only in modules without contractions, whose layout is the
// contractions' to choose, and only maps whose dim before the small one
// (then innermost) has unknown size or at least kSmallDimMinRest elements.
constexpr int64_t kSmallDimMinRest = 64;

const ir::Dim* SmallDimOutermost(const ir::Module& module) {
  llvm::DenseMap<const ir::Dim*, double> votes;
  double total = 0;
  for (const auto& function : module.functions)
    transforms::WalkOps(*function->body, [&](const ir::Op& op) {
      if (op.kind != ir::OpKind::Map || op.dims.size() < 2) return;
      ir::DimList dims(op.dims);
      const ir::Dim* last = dims[dims.size() - 1];
      // The loop that then runs innermost must be long enough to
      // vectorize: GMM at d = 2 has maps over [n, comp, d], and its
      // gradient ran 25% slower with comp's 5 or 10 innermost.
      const ir::Dim* next = dims[dims.size() - 2];
      if (last->order < 0 || !last->constant ||
          *last->constant > kUnrolledDimMax ||
          (next->constant && *next->constant < kSmallDimMinRest))
        return;
      double work =
          KnownElements(dims) * static_cast<double>(op.region(0)->ops.size());
      votes[last] += work;
      total += work;
    });
  return Winner(votes, total);
}

// Note [Batch dims outermost]: attention's scores `[seq, key, heads]`
// keep heads innermost in canonical order, so the product per head wrote
// its C with a stride of 8 (one scalar store per element, each product
// touching every cache line of all heads' scores: 85-92 GFLOP/s against
// 170), and the product of the weights with the values packed its A with
// the same stride. Moving heads outermost in every array of the module
// (the outer vote) also moves it in the projections' weights and results,
// whose products then run per head, narrow. So only the arrays over the
// same dims as an array that a batched product reads or writes with a
// batch dim innermost get that batch dim outermost; arrays over other dims
// keep the module's layout. Loop nests over those dims follow, as always.
void BatchDimsOutermost(const ir::Module& module, PhysicalLayout& layout) {
  for (const auto& function : module.functions)
    transforms::WalkOps(*function->body, [&](const ir::Op& op) {
      std::optional<MatchedContraction> match = MatchContraction(op);
      if (!match) return;
      for (const ir::Value* array :
           {static_cast<const ir::Value*>(op.results[0]), match->a, match->b}) {
        const ir::DimList& dims = array->type.dims;
        const ir::Dim* last = PhysicalOrder(layout, dims).back();
        if (last->order < 0 || last == layout.innermost ||
            !llvm::is_contained(match->shape.batch, last) ||
            llvm::any_of(
                layout.batch_outermost,
                [&](const auto& entry) { return entry.first == dims; }))
          continue;
        layout.batch_outermost.emplace_back(dims, last);
      }
    });
}

}  // namespace

PhysicalLayout ChoosePhysicalLayout(const ir::Module& module) {
  // Innermost: each contraction whose C has innermost one of the kernel's
  // free dims (rows m or columns n) too narrow to fill the kernel's
  // columns, while the other one would, votes (with its multiply-adds) for
  // the other one innermost: the kernel then takes it as its columns
  // (EmitContraction computes C^T = B^T A^T if it is m).
  // Outermost: each batched contraction whose batch dim is not outermost
  // in C, A or B votes for it outermost, so that each product reads and
  // writes contiguous blocks (GMM d64: x - mu : f64[n, comp, e] is 1000
  // rows of 64 per component, 12.8 KB apart, and packing them missed the
  // caches).
  llvm::DenseMap<const ir::Dim*, double> inner_votes, outer_votes;
  double total = 0;
  for (const auto& function : module.functions)
    transforms::WalkOps(*function->body, [&](const ir::Op& op) {
      std::optional<MatchedContraction> match = MatchContraction(op);
      if (!match) return;
      const ir::ContractionShape& shape = match->shape;
      const ir::DimList& c = op.results[0]->type.dims;
      double work = KnownElements(c) * KnownElements(ir::DimList({shape.k}));
      total += work;
      const ir::Dim* innermost = c[c.size() - 1];
      const ir::Dim* other = innermost == shape.m ? shape.n : shape.m;
      if ((innermost == shape.m || innermost == shape.n) &&
          !MayFillColumns(innermost) && MayFillColumns(other) &&
          other->order >= 0)
        inner_votes[other] += work;
      for (const ir::Dim* batch : shape.batch)
        if (batch->order >= 0 && !(FirstOrdinary(c, batch) &&
                                   FirstOrdinary(match->a->type.dims, batch) &&
                                   FirstOrdinary(match->b->type.dims, batch)))
          outer_votes[batch] += work;
    });
  PhysicalLayout layout;
  layout.innermost = Winner(inner_votes, total);
  layout.outermost = Winner(outer_votes, total);
  if (layout.outermost == layout.innermost) layout.outermost = nullptr;
  if (total == 0)
    layout.outermost = SmallDimOutermost(module);
  else
    BatchDimsOutermost(module, layout);
  return layout;
}

std::vector<const ir::Dim*> PhysicalOrder(const PhysicalLayout& layout,
                                          const ir::DimList& dims) {
  const ir::Dim* outermost = layout.outermost;
  for (const auto& [set, dim] : layout.batch_outermost)
    if (set == dims) outermost = dim;
  std::vector<const ir::Dim*> order;
  for (const ir::Dim* dim : dims)
    if (dim->order < 0) order.push_back(dim);
  if (outermost != nullptr && dims.Contains(outermost))
    order.push_back(outermost);
  for (const ir::Dim* dim : dims)
    if (dim->order >= 0 && dim != outermost && dim != layout.innermost)
      order.push_back(dim);
  if (layout.innermost != nullptr && dims.Contains(layout.innermost))
    order.push_back(layout.innermost);
  return order;
}

std::vector<const ir::Dim*> FunctionEmitter::LoopOrder(
    const ir::DimList& dims) const {
  return PhysicalOrder(module_.layout, dims);
}

bool FunctionEmitter::IsCanonicalLayout(const ir::Type& type) const {
  std::vector<const ir::Dim*> order = LoopOrder(type.dims);
  return std::equal(order.begin(), order.end(), type.dims.begin());
}

llvm::Value* FunctionEmitter::Relayout(const ir::Type& type, llvm::Value* data,
                                       bool to_physical, llvm::Value* into) {
  if (type.IsScalar() || IsCanonicalLayout(type)) return data;
  llvm::Value* copy = into != nullptr ? into : Allocate(type);
  ArrayView from = View(type, data, /*canonical=*/to_physical);
  ArrayView to = View(type, copy, /*canonical=*/!to_physical);
  Coords coords;
  EmitLoopNest(LoopOrder(type.dims), coords,
               [&] { StoreElement(to, coords, LoadElement(from, coords)); });
  return copy;
}

llvm::Value* FunctionEmitter::RelayoutOwned(const ir::Type& type,
                                            llvm::Value* data, bool to_physical,
                                            llvm::Value* into) {
  llvm::Value* copy = Relayout(type, data, to_physical, into);
  if (copy != data) Free(data);
  return copy;
}

llvm::Value* FunctionEmitter::CanonicalTemporary(
    const ir::Type& type, llvm::Value* data,
    std::vector<llvm::Value*>& temporaries) {
  llvm::Value* canonical = Relayout(type, data, /*to_physical=*/false);
  if (canonical != data) temporaries.push_back(canonical);
  return canonical;
}

}  // namespace delta::codegen
