// Unit tests of the interval analysis of index arithmetic (index_range.h).
#include "compiler/ir/index_range.h"

#include <doctest/doctest.h>

#include "compiler/ir/builder.h"

using namespace delta::ir;

namespace {

// A map over n whose body the test fills: `i` is its index, as an i64.
struct MapBody {
  Module module;
  Dim* n = module.AddDim("n", 10);
  Function* f = module.AddFunction("f");
  Builder b{f};
  Value* index = nullptr;
  Value* i = nullptr;

  MapBody() {
    Op* map = b.Create(OpKind::Map, {}, {Type{ElemKind::I64, nullptr, {n}}});
    map->dims = {n};
    Block* body = b.AddRegion(map, {Type{ElemKind::Index, n, {}}});
    b.SetInsertionBlock(body);
    index = body->args[0];
    i = b.Convert(index, ElemKind::I64);
  }
  Value* Int(int64_t value) { return b.IntConst(ElemKind::I64, value); }
  Value* Compare(OpKind kind, Value* a, Value* c) {
    return b.Binary(kind, a, c);
  }
  // select(cond, k, 0): the guarded position of a batched `if`.
  Value* Guarded(Value* cond, Value* k) { return b.Select(cond, k, Int(0)); }
};

}  // namespace

TEST_CASE("a read at i - 1 under i != 0 is in range, unguarded it is not") {
  MapBody m;
  Value* before = m.b.Binary(OpKind::Sub, m.i, m.Int(1));
  Value* nonzero = m.b.Unary(OpKind::Not, m.Compare(OpKind::Eq, m.i, m.Int(0)));
  CHECK(IsIndexInRange(m.Guarded(nonzero, before), m.n));
  CHECK_FALSE(IsIndexInRange(before, m.n));
  // Guarded by the wrong condition.
  Value* small = m.Compare(OpKind::Lt, m.i, m.Int(5));
  CHECK_FALSE(IsIndexInRange(m.Guarded(small, before), m.n));
}

TEST_CASE("a read at i + 1 under i + 1 < size(n), and both guards at once") {
  MapBody m;
  Value* after = m.b.Binary(OpKind::Add, m.i, m.Int(1));
  Value* inside = m.Compare(OpKind::Lt, after, m.b.Size(m.n));
  CHECK(IsIndexInRange(m.Guarded(inside, after), m.n));
  CHECK_FALSE(IsIndexInRange(after, m.n));
  Value* both =
      m.b.Binary(OpKind::And, m.Compare(OpKind::Ge, after, m.Int(0)), inside);
  CHECK(IsIndexInRange(m.Guarded(both, after), m.n));
  // i + 1 <= size(n) lets i + 1 reach size(n).
  Value* loose = m.Compare(OpKind::Le, after, m.b.Size(m.n));
  CHECK_FALSE(IsIndexInRange(m.Guarded(loose, after), m.n));
}

TEST_CASE("size(n) - 1 is out of range where n may be empty") {
  Module module;
  Dim* n = module.AddDim("n", 10);
  Function* f = module.AddFunction("f");
  Builder b(f);
  Value* last = b.Binary(OpKind::Sub, b.Size(n), b.IntConst(ElemKind::I64, 1));
  // No index of n lives here, so nothing says size(n) >= 1.
  CHECK_FALSE(IsIndexInRange(last, n));
}

TEST_CASE("compares decided by the bounds of a loop's part") {
  MapBody m;
  Value* first = m.Compare(OpKind::Eq, m.i, m.Int(0));
  Op* first_op = first->def;
  CHECK(DecideCompare(*first_op, {m.index, 0, 0}) == std::nullopt);
  CHECK(DecideCompare(*first_op, {m.index, 1, 0}) == false);
  Value* after = m.b.Binary(OpKind::Add, m.i, m.Int(1));
  Op* inside = m.Compare(OpKind::Lt, after, m.b.Size(m.n))->def;
  CHECK(DecideCompare(*inside, {m.index, 0, 0}) == std::nullopt);
  CHECK(DecideCompare(*inside, {m.index, 0, 1}) == true);
  // Two shifts deep: j = i - 1 where i != 0, then j == 0 is false from
  // i >= 2 on.
  Value* nonzero = m.b.Unary(OpKind::Not, first);
  Value* j = m.b.Convert(
      m.b.ToIndex(m.n,
                  m.Guarded(nonzero, m.b.Binary(OpKind::Sub, m.i, m.Int(1)))),
      ElemKind::I64);
  Op* j_first = m.Compare(OpKind::Eq, j, m.Int(0))->def;
  CHECK(DecideCompare(*j_first, {m.index, 1, 0}) == std::nullopt);
  CHECK(DecideCompare(*j_first, {m.index, 2, 0}) == false);
}
