// Maps as loop nests: the body is emitted once per point of the map's dims,
// inside loops over them (parallel when large), writing each result in
// place; small one-hot dims are unrolled instead (Note [One-hot dims]).
#include <algorithm>
#include <utility>

#include "compiler/codegen/llvm/emitter.h"
#include "compiler/transforms/rewrite.h"

namespace delta::codegen {
namespace {

// Note [One-hot dims]: reverse mode assembles the adjoint of a vector that
// a function reads element by element (`cam[cp: 6]`) as a map over the
// vector's dim whose body compares the dim's index with constants and
// selects one of several values (BA's Jacobian: a map over [cp, uv, obs]
// choosing among eleven [obs, comp] arrays). Looped over, every element
// evaluates every compare and reads every array. The dims of a map whose
// index is compared with a value from outside the body, if they are small
// constants, are unrolled inside the loops over the other dims instead:
// each copy of the body sees constant indices, LLVM folds the compares and
// selects away, and copies that compute the same values share them. The
// outer loops run over the large dims, which the pool splits and the
// vectorizer widens.
constexpr int64_t kOneHotDimMax = 16;

// Whether an op of `body` may fail at run time or has an effect, or has
// regions (loops of its own).
bool MayFailInside(const ir::Block& body) {
  for (const auto& inner : body.ops)
    if (inner->kind != ir::OpKind::Yield &&
        (transforms::HasEffects(*inner) || !inner->regions.empty()))
      return true;
  return false;
}

constexpr int64_t kOneHotCopiesMax = 32;

ir::DimList OneHotDims(const ir::Op& map) {
  const ir::Block& body = *map.region(0);
  ir::DimList dims;
  int64_t copies = 1;
  for (const auto& inner : body.ops) {
    if (inner->kind != ir::OpKind::Eq && inner->kind != ir::OpKind::Ne)
      continue;
    for (size_t k = 0; k < 2; ++k) {
      const ir::Value* index = inner->operands[k];
      const ir::Value* other = inner->operands[1 - k];
      auto arg = std::find(body.args.begin(), body.args.end(), index);
      bool outside = other->def != nullptr && other->def->parent != &body;
      if (arg == body.args.end() || !outside) continue;
      const ir::Dim* dim = map.dims[arg - body.args.begin()];
      if (dims.Contains(dim) || !dim->constant ||
          *dim->constant > kOneHotDimMax ||
          copies * *dim->constant > kOneHotCopiesMax)
        continue;
      copies *= *dim->constant;
      dims.Insert(dim);
    }
  }
  // Some dim must remain to loop over.
  if (dims.size() == map.dims.size()) return {};
  return dims;
}

// Note [Boundary peeling]
// A shifted read, `if i == 0 { 1.0 } else { y[n: i - 1] }`, reads y at
// `select(i != 0, i - 1, 0)` (Note [Guarded lanes]); fused stages of a
// stencil (an RK4 step reading the previous stage at i - 1) nest such
// selects. LLVM sees no stride in a select, so the loop reads y with
// gathers, one element per lane. Yet every compare of the index with a
// constant is decided from a few iterations on: i != 0 holds for i >= 1.
// So a map whose body has such compares runs its loop over that dim in
// three parts: [0, first) and [size - last, size) as written, and between
// them the same body with those compares emitted as constants, first and
// last (at most kPeelMax) the smallest from which on the most compares are
// decided (ir::DecideCompare, Note [Index ranges]; the adjoint of a read
// at i - 1 reads at i + 1 under i + 1 < size(n)). In the middle the
// selects fold, the reads are at i - 1, i - 2, ..., contiguous, and LLVM
// vectorizes them as plain loads. A chunk of a parallel loop splits its
// own range the same way (the outer parts are empty inside).
constexpr int64_t kPeelMax = 16;

// The first and last of Note [Boundary peeling] for the index argument
// `index` of `body`, or nullopt when no compare is decided that way.
std::optional<std::pair<int64_t, int64_t>> PeelPoints(const ir::Block& body,
                                                      const ir::Value* index) {
  std::vector<const ir::Op*> compares;
  for (const auto& inner : body.ops)
    if (ir::HasFlag(inner->kind, ir::kCompare)) compares.push_back(inner.get());
  if (compares.empty()) return std::nullopt;
  auto decided = [&](int64_t first, int64_t last) {
    int count = 0;
    for (const ir::Op* compare : compares)
      count += ir::DecideCompare(*compare, {index, first, last}).has_value();
    return count;
  };
  const int none = decided(0, 0);
  int best = none;
  int64_t first = 0;
  int64_t last = 0;
  for (int64_t at = 1; at <= kPeelMax; ++at)
    if (int count = decided(at, 0); count > best) {
      best = count;
      first = at;
    }
  for (int64_t at = 1; at <= kPeelMax; ++at)
    if (int count = decided(first, at); count > best) {
      best = count;
      last = at;
    }
  if (best == none) return std::nullopt;
  return std::make_pair(first, last);
}

}  // namespace

// The dims of `op` that EmitMap unrolls inside its loops: the one-hot
// dims (Note [One-hot dims]) and, like EmitLoopNest, an innermost dim of
// a few elements; never a blocked dim, and never every dim.
ir::DimList FunctionEmitter::UnrolledMapDims(const ir::Op& op) {
  ir::DimList unrolled;
  for (const ir::Dim* dim : OneHotDims(op))
    if (!dim_ranges_.contains(dim)) unrolled.Insert(dim);
  std::vector<const ir::Dim*> order = LoopOrder(ir::DimList(op.dims));
  auto small = [&](const ir::Dim* dim) {
    return order.size() > 1 && dim->constant && !dim_ranges_.contains(dim) &&
           *dim->constant <= kUnrolledDimMax;
  };
  if (small(order.back())) unrolled.Insert(order.back());
  // Note [Small dims outermost] in layout.cpp.
  if (order.front() == module_.layout.outermost && small(order.front()))
    unrolled.Insert(order.front());
  if (unrolled.size() == op.dims.size()) return {};
  return unrolled;
}

void FunctionEmitter::EmitMap(const ir::Op& op) {
  std::vector<ArrayView> results;
  for (const ir::Value* result : op.results) {
    llvm::Value* into = ResultBuffer(op, result);
    results.push_back(
        View(result->type, into != nullptr ? into : Allocate(result->type)));
  }
  const ir::Block& body = *op.region(0);
  const ir::Op* yield = body.terminator();
  // Each point runs the whole body: count it as a few elements of work.
  llvm::Value* work = builder_.CreateMul(
      ElementCount(ir::DimList(op.dims)),
      builder_.getInt64(static_cast<int64_t>(body.ops.size())));
  // The unrolled dims' points run one after the other inside the loops
  // over the rest, and their scalar results are stored after the last
  // one: LLVM cannot tell that the stores do not overwrite what the next
  // copy reads, so stores in between would keep it from sharing the
  // values that copies compute alike (a forward pass that fuse-maps
  // copied into a reverse pass over one more dim).
  ir::DimList unrolled = UnrolledMapDims(op);
  std::vector<const ir::Dim*> loops =
      LoopOrder(ir::DimList(op.dims).Minus(unrolled));
  // LLVM's cost model judged BA's fused forward and reverse pass (two
  // copies sharing most values) not worth vectorizing, wrongly: 28 -> 19
  // ms; and its forward pass with indirect reads of the cameras, 16 ->
  // 13.4 ms. A body that cannot fail has one exit, so the loop is legal
  // to vectorize (Note [One-hot dims] in docs/internals/codegen.md).
  bool outer_force = force_vectorize_;
  force_vectorize_ = !MayFailInside(body);
  std::optional<Peel> outer_peel = peel_;
  peel_.reset();
  // The innermost loop first: its reads are the ones LLVM vectorizes. A
  // sharded dim's loop runs over this process's block, which its global
  // size does not bound (docs/distributed.md).
  for (auto dim = loops.rbegin(); dim != loops.rend() && !peel_; ++dim) {
    size_t k =
        std::find(op.dims.begin(), op.dims.end(), *dim) - op.dims.begin();
    if (!(*dim)->sharded)
      if (auto points = PeelPoints(body, body.args[k]))
        peel_ = Peel{*dim, body.args[k], points->first, points->second};
  }
  Coords coords;
  EmitParallelNest(loops, coords, work, [&] {
    struct Store {
      llvm::Value* pointer;
      ir::ElemKind elem;
      llvm::Value* value;
    };
    std::vector<Store> stores;
    auto emit_point = [&] {
      std::vector<llvm::Value*> args;
      for (const ir::Dim* dim : op.dims) args.push_back(coords[dim]);
      EmitRegion(
          body, args, std::vector<bool>(args.size(), false), YieldMode::Borrow,
          [&](const std::vector<llvm::Value*>& values) {
            for (size_t i = 0; i < values.size(); ++i) {
              const ir::Type& type = yield->operands[i]->type;
              if (type.IsScalar()) {
                stores.push_back({ElementPointer(results[i], coords),
                                  results[i].type.elem, values[i]});
                continue;
              }
              // A yielded array fills the slice of the result at this
              // point.
              if (module_.hooks != nullptr)
                module_.hooks->BeforeHostRead(*this, type, values[i]);
              ArrayView slice = View(type, values[i]);
              std::vector<const ir::Dim*> dims = LoopOrder(type.dims);
              EmitLoopNest(dims, coords, [&] {
                StoreElement(results[i], coords, LoadElement(slice, coords));
              });
            }
          });
    };
    // Every point of the unrolled dims, the last dim fastest.
    std::function<void(size_t)> unroll = [&](size_t k) {
      if (k == unrolled.size()) {
        emit_point();
        return;
      }
      for (int64_t i = 0; i < *unrolled[k]->constant; ++i) {
        coords[unrolled[k]] = builder_.getInt64(i);
        unroll(k + 1);
      }
      coords.erase(unrolled[k]);
    };
    unroll(0);
    for (const Store& store : stores)
      StoreAt(store.pointer, store.elem, store.value);
  });
  force_vectorize_ = outer_force;
  peel_ = outer_peel;
  for (size_t i = 0; i < results.size(); ++i)
    Set(op.results[i], results[i].data);
}

}  // namespace delta::codegen
