// Unit tests of the IR interpreter and of the §7 value printer, on small
// modules built by hand.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include "compiler/codegen/interpreter/interpreter.h"

#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>

#include "compiler/ir/builder.h"
#include "compiler/ir/verifier.h"
#include "runtime/format.h"

using namespace delta::ir;
using namespace delta::interpreter;

namespace {

// Every op kind that some test executed; the last test checks it is all.
std::set<OpKind> covered_kinds;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Type F32(DimList dims = {}) { return Type{ElemKind::F32, nullptr, dims}; }
Type F64(DimList dims = {}) { return Type{ElemKind::F64, nullptr, dims}; }
Type I32(DimList dims = {}) { return Type{ElemKind::I32, nullptr, dims}; }
Type I64(DimList dims = {}) { return Type{ElemKind::I64, nullptr, dims}; }
Type IndexOf(const Dim* dim, DimList dims = {}) {
  return Type{ElemKind::Index, dim, dims};
}

// One function `f` under construction in a module, with its ops located at
// t.dl:3:14.
struct Fixture {
  Module module;
  Function* f = module.AddFunction("f");
  Builder b{f};
  std::string printed;
  InterpreterOptions options;

  Fixture() { b.SetLoc({"t.dl", 3, 14, {}}); }

  Value* Param(Type type, Function* function = nullptr) {
    function = function ? function : f;
    Value* value = function->NewValue(std::move(type));
    value->block = function->body.get();
    value->index = static_cast<unsigned>(function->body->args.size());
    function->params.push_back(value);
    function->body->args.push_back(value);
    return value;
  }

  // Returns `results` from f, verifies the module and calls f.
  llvm::Expected<std::vector<Tensor>> Call(std::vector<Value*> results,
                                           std::vector<Tensor> args = {}) {
    for (Value* value : results) f->result_types.push_back(value->type);
    b.Return(std::move(results));
    auto errors = Verify(module);
    for (const auto& error : errors) FAIL(error);
    llvm::raw_string_ostream out(printed);
    Interpreter interpreter(module, out, options);
    auto values = interpreter.Call(*f, std::move(args));
    covered_kinds.insert(interpreter.executed_kinds().begin(),
                         interpreter.executed_kinds().end());
    return values;
  }

  // The results of a call that must succeed, printed per §7.
  std::vector<std::string> Run(std::vector<Value*> results,
                               std::vector<Tensor> args = {}) {
    auto values = Call(std::move(results), std::move(args));
    std::vector<std::string> texts;
    if (!values) {
      FAIL(llvm::toString(values.takeError()));
      return texts;
    }
    for (const Tensor& value : *values) texts.push_back(FormatTensor(value));
    return texts;
  }
  std::string RunOne(Value* result, std::vector<Tensor> args = {}) {
    auto texts = Run({result}, std::move(args));
    return texts.empty() ? "" : texts[0];
  }

  // The message of a call that must fail.
  std::string Error(std::vector<Value*> results,
                    std::vector<Tensor> args = {}) {
    auto values = Call(std::move(results), std::move(args));
    if (values) {
      FAIL("the call succeeded");
      return "";
    }
    return llvm::toString(values.takeError());
  }

  // A map over `dims` whose region `body` computes the yielded values.
  template <typename Body>
  Op* Map(std::vector<const Dim*> dims, std::vector<Type> result_types,
          Body body) {
    Op* map = b.Create(OpKind::Map, {}, std::move(result_types));
    map->dims = dims;
    std::vector<Type> arg_types;
    for (const Dim* dim : dims) arg_types.push_back(IndexOf(dim));
    Block* region = b.AddRegion(map, arg_types);
    InsertionGuard guard(b);
    b.SetInsertionBlock(region);
    b.Yield(body(region->args));
    return map;
  }

  Value* F(double value) { return b.FloatConst(ElemKind::F32, value); }
  Value* D(double value) { return b.FloatConst(ElemKind::F64, value); }
  Value* L(int64_t value) { return b.IntConst(ElemKind::I64, value); }
  Value* I(int64_t value) { return b.IntConst(ElemKind::I32, value); }
};

Tensor Floats(ElemKind elem, DimList dims, std::vector<int64_t> shape,
              std::vector<double> values) {
  return Tensor::FloatArray(elem, std::move(dims), std::move(shape),
                            std::move(values));
}

}  // namespace

// --- Printing (§7) -----------------------------------------------------------

TEST_CASE("scalars print in the shortest form of their own type") {
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, 0.1)) == "0.1");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F64, 0.1)) == "0.1");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, 3)) == "3");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, -2.5e-7)) == "-2.5e-07");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, 1.0 / 3)) == "0.33333334");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F64, 1.0 / 3)) ==
        "0.3333333333333333");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, 1e20)) == "1e+20");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, kInf)) == "inf");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F64, -kInf)) == "-inf");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F32, kNan)) == "nan");
  CHECK(FormatTensor(Tensor::Float(ElemKind::F64, -kNan)) == "nan");
  CHECK(FormatTensor(Tensor::Int(ElemKind::I32, -7)) == "-7");
  CHECK(FormatTensor(Tensor::Int(ElemKind::I64, int64_t{1} << 40)) ==
        "1099511627776");
  CHECK(FormatTensor(Tensor::Bool(true)) == "true");
  CHECK(FormatTensor(Tensor::Bool(false)) == "false");
  Module module;
  Dim* a = module.AddDim("a", 5);
  CHECK(FormatTensor(Tensor::Index(a, 4)) == "4");
}

TEST_CASE("arrays print their dims, then nested brackets") {
  Module module;
  Dim* a = module.AddDim("a", 2);
  Dim* b = module.AddDim("b", 3);
  Dim* c = module.AddDim("c", 0);
  CHECK(
      FormatTensor(Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 2, 3, 4, 5, 6})) ==
      "[a=2, b=3] [[1, 2, 3], [4, 5, 6]]");
  CHECK(FormatTensor(Floats(ElemKind::F64, {b}, {3}, {0.5, kNan, -kInf})) ==
        "[b=3] [0.5, nan, -inf]");
  CHECK(FormatTensor(Tensor::IntArray(ElemKind::Bool, {a}, {2}, {1, 0})) ==
        "[a=2] [true, false]");
  CHECK(FormatTensor(Tensor::IntArray(ElemKind::Index, {a}, {2}, {2, 0}, b)) ==
        "[a=2] [2, 0]");
  CHECK(FormatTensor(Tensor::IntArray(ElemKind::I32, {a, c}, {2, 0}, {})) ==
        "[a=2, c=0] [[], []]");
}

TEST_CASE("the C entry point formats the compiled memory layout") {
  float data[] = {0.1f, 2.0f, -0.0f, 1e-45f};
  int64_t shape[] = {2, 1, 2};
  const char* names[] = {"x", "y", "z"};
  DeltaBuffer buffer{};
  CHECK(delta_format_array(&buffer, DELTA_ELEM_F32, data, 3, shape, names) ==
        0);
  delta_buffer_append(&buffer, " ", 1);
  unsigned char flag = 1;
  delta_format_scalar(&buffer, DELTA_ELEM_BOOL, &flag);
  REQUIRE(buffer.data != nullptr);
  CHECK(std::string(buffer.data, buffer.size) ==
        "[x=2, y=1, z=2] [[[0.1, 2]], [[-0, 1e-45]]] true");
  int64_t bad_shape[] = {-1};
  CHECK(delta_format_array(&buffer, DELTA_ELEM_F32, data, 1, bad_shape,
                           names) == -1);
  delta_buffer_free(&buffer);
  CHECK(buffer.data == nullptr);
}

// --- Elementwise ops -------------------------------------------------------

TEST_CASE("binary ops lift by name") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Value* x = t.Param(F32({b}));
  Value* y = t.Param(F32({a}));
  Value* z = t.Param(F32({a, b}));
  Value* sum = t.b.Binary(OpKind::Add, x, y);
  Value* diff = t.b.Binary(OpKind::Sub, z, y);
  auto out = t.Run({sum, diff},
                   {Floats(ElemKind::F32, {b}, {3}, {1, 2, 3}),
                    Floats(ElemKind::F32, {a}, {2}, {10, 20}),
                    Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 2, 3, 4, 5, 6})});
  REQUIRE(out.size() == 2);
  CHECK(out[0] == "[a=2, b=3] [[11, 12, 13], [21, 22, 23]]");
  CHECK(out[1] == "[a=2, b=3] [[-9, -8, -7], [-16, -15, -14]]");
}

TEST_CASE("unary math") {
  Fixture t;
  Dim* e = t.module.AddDim("e", 4);
  Value* x = t.Param(F64({e}));
  std::vector<Value*> results;
  for (OpKind kind :
       {OpKind::Neg, OpKind::Exp, OpKind::Log, OpKind::Sin, OpKind::Cos,
        OpKind::Tan, OpKind::Tanh, OpKind::Sqrt, OpKind::Abs, OpKind::Floor,
        OpKind::Ceil, OpKind::Sigmoid, OpKind::Relu})
    results.push_back(t.b.Unary(kind, x));
  auto out =
      t.Run(results, {Floats(ElemKind::F64, {e}, {4}, {0, 1, -2.5, kNan})});
  REQUIRE(out.size() == 13);
  CHECK(out[0] == "[e=4] [-0, -1, 2.5, nan]");
  CHECK(out[1] == "[e=4] [1, 2.718281828459045, 0.0820849986238988, nan]");
  CHECK(out[2] == "[e=4] [-inf, 0, nan, nan]");
  CHECK(out[3] == "[e=4] [0, 0.8414709848078965, -0.5984721441039565, nan]");
  CHECK(out[4] == "[e=4] [1, 0.5403023058681398, -0.8011436155469337, nan]");
  CHECK(out[5] == "[e=4] [0, 1.5574077246549023, 0.7470222972386603, nan]");
  CHECK(out[6] == "[e=4] [0, 0.7615941559557649, -0.9866142981514303, nan]");
  CHECK(out[7] == "[e=4] [0, 1, nan, nan]");
  CHECK(out[8] == "[e=4] [0, 1, 2.5, nan]");
  CHECK(out[9] == "[e=4] [0, 1, -3, nan]");
  CHECK(out[10] == "[e=4] [0, 1, -2, nan]");
  CHECK(out[11] == "[e=4] [0.5, 0.7310585786300049, 0.07585818002124355, nan]");
  CHECK(out[12] == "[e=4] [0, 1, 0, nan]");
}

TEST_CASE("sign and round, of floats and integers") {
  Fixture t;
  Dim* e = t.module.AddDim("e", 6);
  Value* x = t.Param(F64({e}));
  Value* k = t.Param(I64({e}));
  auto out = t.Run(
      {t.b.Unary(OpKind::Sign, x), t.b.Unary(OpKind::Round, x),
       t.b.Unary(OpKind::Sign, k), t.b.Unary(OpKind::Round, k)},
      {Floats(ElemKind::F64, {e}, {6}, {-0.0, 0.0, -2.5, 2.5, 0.49, kNan}),
       Tensor::IntArray(ElemKind::I64, {e}, {6}, {-7, 0, 3, 1, -1, 9})});
  REQUIRE(out.size() == 4);
  CHECK(out[0] == "[e=6] [-0, 0, -1, 1, 1, nan]");
  CHECK(out[1] == "[e=6] [-0, 0, -3, 3, 0, nan]");
  CHECK(out[2] == "[e=6] [-1, 0, 1, 1, -1, 1]");
  CHECK(out[3] == "[e=6] [-7, 0, 3, 1, -1, 9]");
}

TEST_CASE("f32 results are rounded to float after every op") {
  Fixture t;
  Value* big32 = t.F(16777216);
  Value* sum32 = t.b.Binary(OpKind::Add, big32, t.F(1));
  Value* sum64 = t.b.Binary(OpKind::Add, t.D(16777216), t.D(1));
  Value* tenth = t.b.Binary(OpKind::Add, t.F(0.1), t.F(0.2));
  Value* tenth64 = t.b.Binary(OpKind::Add, t.D(0.1), t.D(0.2));
  Value* third = t.b.Binary(OpKind::Div, t.F(1), t.F(3));
  auto out = t.Run({sum32, sum64, tenth, tenth64, third});
  CHECK(out == std::vector<std::string>{"16777216", "16777217", "0.3",
                                        "0.30000000000000004", "0.33333334"});
}

TEST_CASE("f32_as_f64 evaluates f32 ops in double without rounding") {
  Fixture t;
  t.options.f32_as_f64 = true;
  Dim* a = t.module.AddDim("a", 3);
  Value* x = t.Param(F32({a}));
  Value* sum32 = t.b.Binary(OpKind::Add, t.F(16777216), t.F(1));
  Value* third = t.b.Binary(OpKind::Div, t.F(1), t.F(3));
  Value* tenth = t.F(0.1);
  Value* root = t.b.Unary(OpKind::Sqrt, t.F(2));
  Value* converted = t.b.Convert(t.L(16777217), ElemKind::F32);
  Value* total = t.b.Reduce(ReduceKind::Sum, x, {a});
  Value* scan = t.b.Cumsum(x, a);
  // Arguments are taken as they are, not rounded to float.
  Tensor arg;
  arg.elem = ElemKind::F32;
  arg.dims = DimList{a};
  arg.shape = {3};
  arg.floats = {1e8, 1.0 / 3, 1};
  auto values =
      t.Call({sum32, third, tenth, root, converted, total, scan}, {arg});
  REQUIRE(values);
  REQUIRE(values->size() == 7);
  CHECK((*values)[0].elem == ElemKind::F32);
  CHECK((*values)[0].floats[0] == 16777217.0);
  CHECK((*values)[1].floats[0] == 1.0 / 3);
  CHECK((*values)[2].floats[0] == 0.1);
  CHECK((*values)[3].floats[0] == std::sqrt(2.0));
  CHECK((*values)[4].floats[0] == 16777217.0);
  CHECK((*values)[5].floats[0] == 1e8 + 1.0 / 3 + 1);
  CHECK((*values)[6].floats[2] == 1e8 + 1.0 / 3 + 1);
}

TEST_CASE("integer arithmetic truncates and wraps") {
  Fixture t;
  Value* div = t.b.Binary(OpKind::Div, t.L(-7), t.L(2));
  Value* rem = t.b.Binary(OpKind::Rem, t.L(-7), t.L(2));
  Value* wrap32 = t.b.Binary(OpKind::Add, t.I(2147483647), t.I(1));
  Value* mul32 = t.b.Binary(OpKind::Mul, t.I(65536), t.I(65536));
  Value* min32 = t.b.Binary(OpKind::Div, t.I(-2147483647 - 1), t.I(-1));
  Value* min64 = t.b.Binary(OpKind::Div,
                            t.L(std::numeric_limits<int64_t>::min()), t.L(-1));
  Value* rem64 = t.b.Binary(OpKind::Rem,
                            t.L(std::numeric_limits<int64_t>::min()), t.L(-1));
  Value* neg32 = t.b.Unary(OpKind::Neg, t.I(-2147483647 - 1));
  Value* abs64 = t.b.Unary(OpKind::Abs, t.L(-5));
  Value* max = t.b.Binary(OpKind::Max, t.L(3), t.L(-4));
  auto out =
      t.Run({div, rem, wrap32, mul32, min32, min64, rem64, neg32, abs64, max});
  CHECK(out == std::vector<std::string>{"-3", "-1", "-2147483648", "0",
                                        "-2147483648", "-9223372036854775808",
                                        "0", "-2147483648", "5", "3"});
}

TEST_CASE("integer division by zero is a located run-time error") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 3);
  Value* x = t.Param(I32({a}));
  Value* y = t.Param(I32({a}));
  Value* quotient = t.b.Binary(OpKind::Rem, x, y);
  CHECK(t.Error({quotient},
                {Tensor::IntArray(ElemKind::I32, {a}, {3}, {1, 2, 3}),
                 Tensor::IntArray(ElemKind::I32, {a}, {3}, {1, 0, 3})}) ==
        "t.dl:3:14: error: integer division by zero");
}

TEST_CASE("conversions truncate, saturate and wrap") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 6);
  Value* x = t.Param(F32({a}));
  Value* to_i32 = t.b.Convert(x, ElemKind::I32);
  Value* to_i64 = t.b.Convert(x, ElemKind::I64);
  Value* to_bool = t.b.Convert(x, ElemKind::Bool);
  Value* to_f64 = t.b.Convert(x, ElemKind::F64);
  Value* narrow = t.b.Convert(t.L(4294967297), ElemKind::I32);
  Value* to_f32 = t.b.Convert(t.D(0.1), ElemKind::F32);
  Value* big = t.b.Convert(t.L(16777217), ElemKind::F32);
  Value* from_bool = t.b.Convert(t.b.BoolConst(true), ElemKind::F32);
  Value* iota = t.b.Iota(a);
  Value* position = t.b.Convert(iota, ElemKind::I64);
  Value* position_f = t.b.Convert(iota, ElemKind::F64);
  auto out = t.Run(
      {to_i32, to_i64, to_bool, to_f64, narrow, to_f32, big, from_bool,
       position, position_f},
      {Floats(ElemKind::F32, {a}, {6}, {-2.7, 2.7, 1e10, -1e10, kNan, 0})});
  REQUIRE(out.size() == 10);
  CHECK(out[0] == "[a=6] [-2, 2, 2147483647, -2147483648, 0, 0]");
  CHECK(out[1] == "[a=6] [-2, 2, 10000000000, -10000000000, 0, 0]");
  CHECK(out[2] == "[a=6] [true, true, true, true, true, false]");
  CHECK(out[3] ==
        "[a=6] [-2.700000047683716, 2.700000047683716, 1e+10, -1e+10, nan, "
        "0]");
  CHECK(out[4] == "1");
  CHECK(out[5] == "0.1");
  CHECK(out[6] == "16777216");
  CHECK(out[7] == "1");
  CHECK(out[8] == "[a=6] [0, 1, 2, 3, 4, 5]");
  CHECK(out[9] == "[a=6] [0, 1, 2, 3, 4, 5]");
}

TEST_CASE("comparisons, logic, pow, max/min with NaN, select") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 3);
  Value* x = t.Param(F32({a}));
  Value* y = t.Param(F32({a}));
  std::vector<Value*> results;
  for (OpKind kind :
       {OpKind::Eq, OpKind::Ne, OpKind::Lt, OpKind::Le, OpKind::Gt, OpKind::Ge,
        OpKind::Max, OpKind::Min, OpKind::Pow, OpKind::Rem})
    results.push_back(t.b.Binary(kind, x, y));
  Value* lt = results[2];
  results.push_back(t.b.Binary(OpKind::And, lt, t.b.BoolConst(true)));
  results.push_back(t.b.Binary(OpKind::Or, lt, t.b.BoolConst(true)));
  results.push_back(t.b.Unary(OpKind::Not, lt));
  results.push_back(t.b.Select(lt, x, t.F(-1)));
  auto out = t.Run(results, {Floats(ElemKind::F32, {a}, {3}, {2, kNan, 3}),
                             Floats(ElemKind::F32, {a}, {3}, {3, 1, 2})});
  REQUIRE(out.size() == 14);
  CHECK(out[0] == "[a=3] [false, false, false]");
  CHECK(out[1] == "[a=3] [true, true, true]");
  CHECK(out[2] == "[a=3] [true, false, false]");
  CHECK(out[3] == "[a=3] [true, false, false]");
  CHECK(out[4] == "[a=3] [false, false, true]");
  CHECK(out[5] == "[a=3] [false, false, true]");
  CHECK(out[6] == "[a=3] [3, nan, 3]");
  CHECK(out[7] == "[a=3] [2, nan, 2]");
  CHECK(out[8] == "[a=3] [8, nan, 9]");
  CHECK(out[9] == "[a=3] [2, nan, 1]");
  CHECK(out[10] == "[a=3] [true, false, false]");
  CHECK(out[11] == "[a=3] [true, true, true]");
  CHECK(out[12] == "[a=3] [false, true, true]");
  CHECK(out[13] == "[a=3] [2, -1, -1]");
}

// --- Dims and indices --------------------------------------------------------

TEST_CASE("size, iota, to_index and broadcast") {
  Fixture t;
  Dim* feat = t.module.AddDim("feat", 4);
  Dim* b = t.module.AddDim("b", 2);
  Value* size = t.b.Size(feat);
  Value* index = t.b.ToIndex(feat, t.L(3));
  Value* spread = t.b.Broadcast(t.b.Iota(b), {feat});
  auto out = t.Run({size, index, spread});
  CHECK(out == std::vector<std::string>{"4", "3",
                                        "[feat=4, b=2] [[0, 1], [0, 1], "
                                        "[0, 1], [0, 1]]"});
}

TEST_CASE("to_index out of range") {
  Fixture t;
  Dim* feat = t.module.AddDim("feat", 4);
  Value* index = t.b.ToIndex(feat, t.L(7));
  CHECK(t.Error({index}) ==
        "t.dl:3:14: error: index 7 is out of range for dim feat of size 4");
}

TEST_CASE("rename moves data to the new dim's canonical place") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Dim* c = t.module.AddDim("c", 2);
  Value* x = t.Param(F32({a, b}));
  Value* renamed = t.b.Rename(x, a, c);  // f32[b, c]: a transpose
  auto out = t.Run({renamed},
                   {Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(out == std::vector<std::string>{"[b=3, c=2] [[1, 4], [2, 5], [3, 6]]"});
}

TEST_CASE("rename between dims of different run-time sizes") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Value* n = t.L(3);
  Dim* local = t.f->NewDim("t1", std::nullopt, nullptr);
  t.b.DimDef(local, n);
  Value* x = t.Param(F32({a}));
  Value* renamed = t.b.Rename(x, a, local);
  CHECK(t.Error({renamed}, {Floats(ElemKind::F32, {a}, {2}, {1, 2})}) ==
        "t.dl:3:14: error: cannot rename dim a of size 2 to dim t1 of size 3");
}

TEST_CASE("local dims: a run-time size, and a negative one") {
  {
    Fixture t;
    Dim* local = t.f->NewDim("t1", std::nullopt, nullptr);
    t.b.DimDef(local, t.b.Binary(OpKind::Sub, t.L(4), t.L(1)));
    Value* iota = t.b.Iota(local);
    CHECK(t.RunOne(iota) == "[t1=3] [0, 1, 2]");
  }
  {
    Fixture t;
    Dim* local = t.f->NewDim("t1", std::nullopt, nullptr);
    t.b.DimDef(local, t.L(-2));
    CHECK(t.Error({t.b.Size(local)}) ==
          "t.dl:3:14: error: size -2 of dim t1 is negative");
  }
}

TEST_CASE("gather: an embedding lookup and shared dims") {
  Fixture t;
  Dim* batch = t.module.AddDim("batch", 3);
  Dim* vocab = t.module.AddDim("vocab", 4);
  Dim* feat = t.module.AddDim("feat", 2);
  Dim* classes = t.module.AddDim("classes", 2);
  Value* emb = t.Param(F32({vocab, feat}));
  Value* tok = t.Param(IndexOf(vocab, {batch}));
  Value* logp = t.Param(F32({batch, classes}));
  Value* labels = t.Param(IndexOf(classes, {batch}));
  Value* rows = t.b.Gather(emb, {tok});        // f32[batch, feat]
  Value* picked = t.b.Gather(logp, {labels});  // f32[batch]: matched by batch
  Value* one =
      t.b.Gather(emb, {t.b.ToIndex(vocab, t.L(2)), t.b.ToIndex(feat, t.L(1))});
  auto out = t.Run(
      {rows, picked, one},
      {Floats(ElemKind::F32, {vocab, feat}, {4, 2},
              {0, 1, 10, 11, 20, 21, 30, 31}),
       Tensor::IntArray(ElemKind::Index, {batch}, {3}, {3, 0, 3}, vocab),
       Floats(ElemKind::F32, {batch, classes}, {3, 2}, {1, 2, 3, 4, 5, 6}),
       Tensor::IntArray(ElemKind::Index, {batch}, {3}, {1, 0, 1}, classes)});
  CHECK(out == std::vector<std::string>{
                   "[batch=3, feat=2] [[30, 31], [0, 1], [30, 31]]",
                   "[batch=3] [2, 3, 6]", "21"});
}

TEST_CASE("gather checks indices made by an unchecked convert") {
  Fixture t;
  Dim* vocab = t.module.AddDim("vocab", 4);
  Value* emb = t.Param(F32({vocab}));
  Value* index = t.b.Convert(t.L(9), ElemKind::Index, vocab);
  CHECK(t.Error({t.b.Gather(emb, {index})},
                {Floats(ElemKind::F32, {vocab}, {4}, {1, 2, 3, 4})}) ==
        "t.dl:3:14: error: index 9 is out of range for dim vocab of size 4");
}

TEST_CASE("scatter_add is the adjoint of gather") {
  Fixture t;
  Dim* batch = t.module.AddDim("batch", 3);
  Dim* vocab = t.module.AddDim("vocab", 4);
  Dim* feat = t.module.AddDim("feat", 2);
  Dim* classes = t.module.AddDim("classes", 2);
  Value* v = t.Param(F32({batch, feat}));
  Value* tok = t.Param(IndexOf(vocab, {batch}));
  Value* dy = t.Param(F32({batch}));
  Value* labels = t.Param(IndexOf(classes, {batch}));
  // Repeated tokens add up; rows no token names stay zero.
  Value* rows = t.b.ScatterAdd(v, {tok}, F32({vocab, feat}));
  // Shared dims: batch is matched by name, so each row gets its own label.
  Value* picked = t.b.ScatterAdd(dy, {labels}, F32({batch, classes}));
  // A result dim the values lack: the sums are the same along it.
  Value* spread = t.b.ScatterAdd(dy, {tok}, F32({vocab, feat}));
  auto out = t.Run(
      {rows, picked, spread},
      {Floats(ElemKind::F32, {batch, feat}, {3, 2}, {1, 2, 3, 4, 5, 6}),
       Tensor::IntArray(ElemKind::Index, {batch}, {3}, {3, 0, 3}, vocab),
       Floats(ElemKind::F32, {batch}, {3}, {0.5, 0.25, 2}),
       Tensor::IntArray(ElemKind::Index, {batch}, {3}, {1, 0, 1}, classes)});
  CHECK(out ==
        std::vector<std::string>{
            "[vocab=4, feat=2] [[3, 4], [0, 0], [0, 0], [6, 8]]",
            "[batch=3, classes=2] [[0, 0.5], [0.25, 0], [0, 2]]",
            "[vocab=4, feat=2] [[0.25, 0.25], [0, 0], [0, 0], [2.5, 2.5]]"});
}

// --- Reductions and scans
// ------------------------------------------------------

TEST_CASE("reduce over dims") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Value* x = t.Param(F32({a, b}));
  std::vector<Value*> results;
  for (ReduceKind kind :
       {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min,
        ReduceKind::Argmax, ReduceKind::Argmin})
    results.push_back(t.b.Reduce(kind, x, {b}));
  results.push_back(t.b.Reduce(ReduceKind::Sum, x, {a, b}));
  results.push_back(t.b.Reduce(ReduceKind::Max, x, {a}));
  auto out = t.Run(
      results, {Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 5, 5, -1, -1, 0})});
  REQUIRE(out.size() == 8);
  CHECK(out[0] == "[a=2] [11, -2]");
  CHECK(out[1] == "[a=2] [25, 0]");
  CHECK(out[2] == "[a=2] [5, 0]");
  CHECK(out[3] == "[a=2] [1, -1]");
  CHECK(out[4] == "[a=2] [1, 2]");  // ties give the lowest index
  CHECK(out[5] == "[a=2] [0, 0]");
  CHECK(out[6] == "9");
  CHECK(out[7] == "[b=3] [1, 5, 5]");
}

TEST_CASE("reductions propagate NaN; argmax picks the first NaN") {
  Fixture t;
  Dim* b = t.module.AddDim("b", 4);
  Value* x = t.Param(F64({b}));
  auto out = t.Run(
      {t.b.Reduce(ReduceKind::Max, x, {b}), t.b.Reduce(ReduceKind::Min, x, {b}),
       t.b.Reduce(ReduceKind::Argmax, x, {b}),
       t.b.Reduce(ReduceKind::Argmin, x, {b})},
      {Floats(ElemKind::F64, {b}, {4}, {1, kNan, 7, kNan})});
  CHECK(out == std::vector<std::string>{"nan", "nan", "1", "1"});
}

TEST_CASE("integer reductions wrap; empty reductions give the identity") {
  Fixture t;
  Dim* b = t.module.AddDim("b", 2);
  Dim* none = t.module.AddDim("none", 0);
  Value* x = t.Param(I32({b}));
  Value* empty = t.Param(F32({none}));
  auto out = t.Run({t.b.Reduce(ReduceKind::Sum, x, {b}),
                    t.b.Reduce(ReduceKind::Sum, empty, {none}),
                    t.b.Reduce(ReduceKind::Prod, empty, {none}),
                    t.b.Reduce(ReduceKind::Max, empty, {none})},
                   {Tensor::IntArray(ElemKind::I32, {b}, {2}, {2147483647, 2}),
                    Floats(ElemKind::F32, {none}, {0}, {})});
  CHECK(out == std::vector<std::string>{"-2147483647", "0", "1", "-inf"});
}

TEST_CASE("argmax over an empty dim is a run-time error") {
  Fixture t;
  Dim* none = t.module.AddDim("none", 0);
  Value* x = t.Param(F32({none}));
  CHECK(t.Error({t.b.Reduce(ReduceKind::Argmax, x, {none})},
                {Floats(ElemKind::F32, {none}, {0}, {})}) ==
        "t.dl:3:14: error: argmax over the empty dim none");
}

TEST_CASE("a fused reduce computes each element in its region") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Value* x = t.Param(F32({a, b}));
  Value* w = t.Param(F32({b}));
  // sum(x * w, b) with the product computed element by element.
  Op* reduce = t.b.Create(OpKind::Reduce, {}, {F32({a})});
  reduce->reduce = ReduceKind::Sum;
  reduce->dims = {b};
  Block* region = t.b.AddRegion(reduce, {IndexOf(a), IndexOf(b)});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(region);
    Value* xi = t.b.Gather(x, {region->args[0], region->args[1]});
    Value* wi = t.b.Gather(w, {region->args[1]});
    t.b.Yield({t.b.Binary(OpKind::Mul, xi, wi)});
  }
  Op* arg = t.b.Create(OpKind::Reduce, {}, {IndexOf(b, {a})});
  arg->reduce = ReduceKind::Argmax;
  arg->dims = {b};
  Block* arg_region = t.b.AddRegion(arg, {IndexOf(a), IndexOf(b)});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(arg_region);
    t.b.Yield({t.b.Gather(x, {arg_region->args[0], arg_region->args[1]})});
  }
  auto out = t.Run({reduce->result(), arg->result()},
                   {Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 2, 3, 6, 5, 4}),
                    Floats(ElemKind::F32, {b}, {3}, {1, 10, 100})});
  CHECK(out == std::vector<std::string>{"[a=2] [321, 456]", "[a=2] [2, 0]"});
}

TEST_CASE("reduce.custom folds from init in index order") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* d = t.module.AddDim("d", 3);
  Value* x = t.Param(F32({a, d}));
  Value* init = t.F(100);
  Op* fold = t.b.Create(OpKind::ReduceCustom, {init, x}, {F32({a})});
  fold->dims = {d};
  Block* region = t.b.AddRegion(fold, {F32(), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(region);
    // (acc - x) / 2: not associative, so the order shows.
    Value* diff = t.b.Binary(OpKind::Sub, region->args[0], region->args[1]);
    t.b.Yield({t.b.Binary(OpKind::Div, diff, t.F(2))});
  }
  auto out = t.Run({fold->result()},
                   {Floats(ElemKind::F32, {a, d}, {2, 3}, {0, 0, 0, 1, 2, 4})});
  // a=1: ((100 - 1) / 2 - 2) / 2 = 23.75, then (23.75 - 4) / 2 = 9.875.
  CHECK(out == std::vector<std::string>{"[a=2] [12.5, 9.875]"});
}

TEST_CASE("cumsum is an inclusive scan along its dim") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Value* x = t.Param(I64({a, b}));
  auto out = t.Run(
      {t.b.Cumsum(x, b), t.b.Cumsum(x, a)},
      {Tensor::IntArray(ElemKind::I64, {a, b}, {2, 3}, {1, 2, 3, 4, 5, 6})});
  CHECK(out == std::vector<std::string>{"[a=2, b=3] [[1, 3, 6], [4, 9, 15]]",
                                        "[a=2, b=3] [[1, 2, 3], [5, 7, 9]]"});
}

// --- Regions and calls -------------------------------------------------------

TEST_CASE("map yields scalars and arrays, placed by name") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  Value* x = t.Param(F32({a}));
  // for j in b { x * f32(j) }: yields f32[a]; the result is f32[a, b].
  Op* map = t.Map({b}, {F32({a, b}), F32({b})}, [&](auto& args) {
    Value* j = t.b.Convert(args[0], ElemKind::F32);
    return std::vector<Value*>{t.b.Binary(OpKind::Mul, x, j),
                               t.b.Binary(OpKind::Mul, j, j)};
  });
  auto out = t.Run({map->result(0), map->result(1)},
                   {Floats(ElemKind::F32, {a}, {2}, {1, 10})});
  CHECK(out == std::vector<std::string>{"[a=2, b=3] [[0, 1, 2], [0, 10, 20]]",
                                        "[b=3] [0, 1, 4]"});
}

TEST_CASE("a map over two dims") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 2);
  Op* map = t.Map({b, a}, {I64({a, b})}, [&](auto& args) {
    Value* j = t.b.Convert(args[0], ElemKind::I64);
    Value* i = t.b.Convert(args[1], ElemKind::I64);
    return std::vector<Value*>{
        t.b.Binary(OpKind::Add, t.b.Binary(OpKind::Mul, i, t.L(10)), j)};
  });
  CHECK(t.RunOne(map->result()) == "[a=2, b=2] [[0, 1], [10, 11]]");
}

TEST_CASE("loops: over a range and over a dim") {
  Fixture t;
  Dim* time = t.module.AddDim("time", 3);
  Value* xs = t.Param(F32({time}));
  // loop acc = 0.0 for k in 0..10 { acc + f32(k) }
  Op* loop = t.b.Create(OpKind::Loop, {t.L(0), t.L(10), t.F(0)}, {F32()});
  Block* body = t.b.AddRegion(loop, {I64(), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(body);
    Value* k = t.b.Convert(body->args[0], ElemKind::F32);
    t.b.Yield({t.b.Binary(OpKind::Add, body->args[1], k)});
  }
  // loop h = 0.0 for t in time { 2 * h + xs[t] }
  Op* over =
      t.b.Create(OpKind::Loop, {t.L(0), t.b.Size(time), t.F(0)}, {F32()});
  over->dims = {time};
  Block* over_body = t.b.AddRegion(over, {IndexOf(time), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(over_body);
    Value* twice = t.b.Binary(OpKind::Mul, t.F(2), over_body->args[1]);
    Value* x = t.b.Gather(xs, {over_body->args[0]});
    t.b.Yield({t.b.Binary(OpKind::Add, twice, x)});
  }
  auto out = t.Run({loop->result(), over->result()},
                   {Floats(ElemKind::F32, {time}, {3}, {1, 2, 3})});
  CHECK(out == std::vector<std::string>{"45", "11"});
}

TEST_CASE("a loop body with many values keeps reading its bounds") {
  // Regression: the bounds were read through references into the value map,
  // which the body's values rehash.
  Fixture t;
  Op* loop = t.b.Create(OpKind::Loop, {t.L(0), t.L(3), t.F(0)}, {F32()});
  Block* body = t.b.AddRegion(loop, {I64(), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(body);
    Value* acc = body->args[1];
    for (int i = 0; i < 200; ++i) acc = t.b.Binary(OpKind::Add, acc, t.F(1));
    t.b.Yield({acc});
  }
  CHECK(t.RunOne(loop->result()) == "600");
}

TEST_CASE("a loop over a dim stacks the values yielded after the state") {
  Fixture t;
  Dim* time = t.module.AddDim("time", 3);
  Dim* e = t.module.AddDim("e", 2);
  // loop h = 1.0 for t in time { 2 * h } yielding h and [h, -h] per step.
  Op* loop = t.b.Create(OpKind::Loop, {t.L(0), t.b.Size(time), t.F(1)},
                        {F32(), F32({time}), F32({time, e})});
  loop->dims = {time};
  Block* body = t.b.AddRegion(loop, {IndexOf(time), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(body);
    Value* h = body->args[1];
    Value* pair =
        t.b.Select(t.b.Binary(OpKind::Eq, t.b.Iota(e), t.b.ToIndex(e, t.L(0))),
                   h, t.b.Unary(OpKind::Neg, h));
    t.b.Yield({t.b.Binary(OpKind::Mul, t.F(2), h), h, pair});
  }
  auto out = t.Run({loop->result(0), loop->result(1), loop->result(2)});
  CHECK(out ==
        std::vector<std::string>{"8", "[time=3] [1, 2, 4]",
                                 "[time=3, e=2] [[1, -1], [2, -2], [4, -4]]"});
}

TEST_CASE("while and if") {
  Fixture t;
  // let (a, b) = loop (a, b) = (0.0, 1.0) while a < 100.0 { (b, a + b) }
  Op* loop = t.b.Create(OpKind::While, {t.F(0), t.F(1)}, {F32(), F32()});
  Block* cond = t.b.AddRegion(loop, {F32(), F32()});
  Block* body = t.b.AddRegion(loop, {F32(), F32()});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(cond);
    t.b.Yield({t.b.Binary(OpKind::Lt, cond->args[0], t.F(100))});
    t.b.SetInsertionBlock(body);
    t.b.Yield(
        {body->args[1], t.b.Binary(OpKind::Add, body->args[0], body->args[1])});
  }
  Value* positive = t.b.Binary(OpKind::Gt, loop->result(0), t.F(0));
  Op* branch = t.b.Create(OpKind::If, {positive}, {F32()});
  Block* then = t.b.AddRegion(branch, {});
  Block* otherwise = t.b.AddRegion(branch, {});
  {
    InsertionGuard guard(t.b);
    t.b.SetInsertionBlock(then);
    t.b.Yield({t.F(1)});
    t.b.SetInsertionBlock(otherwise);
    t.b.Yield({t.F(-1)});
  }
  auto out = t.Run({loop->result(0), loop->result(1), branch->result()});
  CHECK(out == std::vector<std::string>{"144", "233", "1"});
}

TEST_CASE("calls bind size parameters and relabel dims by name") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Dim* b = t.module.AddDim("b", 3);
  // fn g[n, m](x: f32[n, m]) -> (f32[m], index<n>[m]) {
  //   (sum(x, n), argmax(x, n)) }
  Function* g = t.module.AddFunction("g");
  Builder gb(g);
  for (const char* name : {"n", "m"}) {
    Value* size = g->NewValue(I64(), name);
    size->block = g->body.get();
    g->size_params.push_back(size);
    g->NewDim(name, std::nullopt, size);
  }
  Dim* n = g->dims[0];
  Dim* m = g->dims[1];
  Value* gx = t.Param(F32({n, m}), g);
  Value* total = gx;
  total = gb.Reduce(ReduceKind::Sum, gx, {n});
  Value* best = gb.Reduce(ReduceKind::Argmax, gx, {n});
  g->result_types = {total->type, best->type};
  gb.Return({total, best});
  // f(x: f32[a, b]) = g[n: b, m: a](x): the callee sees the transpose.
  Value* x = t.Param(F32({a, b}));
  Op* call = t.b.Create(OpKind::Call, {x}, {F32({a}), IndexOf(b, {a})});
  call->callee = g;
  call->dims = {b, a};
  auto out = t.Run({call->result(0), call->result(1)},
                   {Floats(ElemKind::F32, {a, b}, {2, 3}, {1, 2, 3, 4, 5, 9})});
  CHECK(out == std::vector<std::string>{"[a=2] [6, 18]", "[a=2] [2, 2]"});
}

TEST_CASE("Call checks its arguments against the parameter types") {
  Fixture t;
  Dim* a = t.module.AddDim("a", 2);
  Value* x = t.Param(F32({a}));
  CHECK(t.Error({x}, {Floats(ElemKind::F32, {a}, {3}, {1, 2, 3})}) ==
        "error: size mismatch: dim a has size 3 where dim a has size 2");
  Fixture u;
  u.Param(F32());
  CHECK(u.Error({}, {}) ==
        "error: @f takes 0 sizes and 1 arguments, given 0 in all");
}

TEST_CASE("arrays beyond the 8 GiB limit are an error, not a crash") {
  Fixture t;
  Dim* huge = t.module.AddDim("huge", int64_t{1} << 40);
  Dim* other = t.module.AddDim("other", int64_t{1} << 40);
  Value* iota = t.b.Iota(huge);
  Value* spread = t.b.Broadcast(iota, {other});
  std::string message = t.Error({spread});
  CHECK(message ==
        "t.dl:3:14: error: an array of type index<huge>[huge] would exceed "
        "the 8 GiB limit");
}

TEST_CASE("print writes its items and a newline; RunMain runs main") {
  Module module;
  Dim* a = module.AddDim("a", 2);
  Function* main = module.AddFunction("main");
  Builder b(main);
  Value* w = b.Broadcast(b.FloatConst(ElemKind::F32, 0.5), {a});
  Op* print = b.Create(OpKind::Print, {w, b.BoolConst(true)}, {});
  // Items are concatenated as they are: lowering supplies the spaces.
  print->print_items = {
      {false, "w: "}, {true, ""}, {false, " "}, {true, ""}, {false, "!"}};
  main->result_types = {};
  b.Return({});
  CHECK(Verify(module).empty());
  std::string text;
  llvm::raw_string_ostream out(text);
  llvm::Error error = RunMain(module, out);
  bool failed = static_cast<bool>(error);
  CHECK_FALSE(failed);
  llvm::consumeError(std::move(error));
  CHECK(text == "w: [a=2] [0.5, 0.5] true!\n");
  // Record the kinds for the coverage test.
  Interpreter interpreter(module, out);
  auto results = interpreter.Call(*main, {});
  CHECK(static_cast<bool>(results));
  if (!results) llvm::consumeError(results.takeError());
  covered_kinds.insert(interpreter.executed_kinds().begin(),
                       interpreter.executed_kinds().end());
}

TEST_CASE("write_npy and read_npy round-trip; a shape mismatch is located") {
  Module module;
  Dim* a = module.AddDim("a", 2);
  Dim* c = module.AddDim("c", 3);
  std::string path = "interpreter_test_npy_" + std::to_string(::getpid());
  Function* main = module.AddFunction("main");
  Builder b(main);
  b.SetLoc(Loc{"t.dl", 4, 7, {}});
  Value* x = b.Convert(b.Iota(c), ElemKind::F32);
  Value* y = b.Binary(OpKind::Add, x,
                      b.Convert(b.Iota(a), ElemKind::F32));  // f32[a, c]
  // Written with axes (c, a), read back in that order.
  Op* write = b.Create(OpKind::WriteNpy, {y}, {});
  write->dims = {c, a};
  write->print_items = {{false, path + ".npy"}};
  Op* read = b.Create(OpKind::ReadNpy, {}, {y->type});
  read->dims = {c, a};
  read->print_items = {{false, path + ".npy"}};
  Op* print = b.Create(OpKind::Print, {read->result()}, {});
  print->print_items = {{true, ""}};
  main->result_types = {};
  b.Return({});
  CHECK(Verify(module).empty());
  std::string text;
  llvm::raw_string_ostream out(text);
  Interpreter interpreter(module, out);
  auto results = interpreter.Call(*main, {});
  CHECK(static_cast<bool>(results));
  if (!results) llvm::consumeError(results.takeError());
  CHECK(text == "[a=2, c=3] [[0, 1, 2], [1, 2, 3]]\n");
  covered_kinds.insert(interpreter.executed_kinds().begin(),
                       interpreter.executed_kinds().end());

  // Reading the same file with the axes swapped is a run-time error.
  Module bad;
  Dim* a2 = bad.AddDim("a", 2);
  Dim* c2 = bad.AddDim("c", 3);
  Function* f = bad.AddFunction("main");
  Builder fb(f);
  fb.SetLoc(Loc{"t.dl", 9, 3, {}});
  Op* wrong = fb.Create(OpKind::ReadNpy, {},
                        {Type{ElemKind::F32, nullptr, DimList({a2, c2})}});
  wrong->dims = {a2, c2};
  wrong->print_items = {{false, path + ".npy"}};
  f->result_types = {wrong->result()->type};
  fb.Return({wrong->result()});
  Interpreter second(bad, out);
  auto failed = second.Call(*f, {});
  REQUIRE_FALSE(static_cast<bool>(failed));
  std::string message = llvm::toString(failed.takeError());
  CHECK(message == "t.dl:9:3: error: '" + path +
                       ".npy' has shape (3, 2), expected (a=2, c=3)");
  std::remove((path + ".npy").c_str());
}

// Declared last: doctest runs test cases in file order, so every test above
// has recorded the kinds of the ops it executed.
TEST_CASE("stop_gradient is the identity") {
  Fixture t;
  Dim* e = t.module.AddDim("e", 2);
  Value* x = t.Param(F64({e}));
  auto out = t.Run({t.b.Unary(OpKind::StopGradient, x)},
                   {Floats(ElemKind::F64, {e}, {2}, {1.5, -2})});
  REQUIRE(out.size() == 1);
  CHECK(out[0] == "[e=2] [1.5, -2]");
}

// An op that ops.def computes with the C math function of its name gives
// what that function gives (the function compiled code calls), in f64 and,
// with the suffix f, in f32, at ordinary and special points.
TEST_CASE("every libm op computes the C library's function of its name") {
  const std::vector<double> points = {0.0,  -0.0, 0.5,   -0.75, 1.0,   2.5,
                                      -3.0, 1e-9, 100.0, kInf,  -kInf, kNan};
  std::vector<OpKind> kinds;
#define DELTA_OP(Name, ...)                                             \
  if (HasFlag(OpKind::Name, kLibm) && IsElementwiseUnary(OpKind::Name)) \
    kinds.push_back(OpKind::Name);
#include "compiler/ir/ops.def"
  CHECK(kinds.size() >= 6);
  for (OpKind kind : kinds) {
    std::string name = OpMnemonic(kind).str();
    auto* f64 =
        reinterpret_cast<double (*)(double)>(dlsym(RTLD_DEFAULT, name.c_str()));
    auto* f32 = reinterpret_cast<float (*)(float)>(
        dlsym(RTLD_DEFAULT, (name + "f").c_str()));
    INFO("libm function " << name);
    REQUIRE((f64 != nullptr && f32 != nullptr));
    for (ElemKind elem : {ElemKind::F64, ElemKind::F32}) {
      Fixture t;
      Dim* e = t.module.AddDim("e", static_cast<int64_t>(points.size()));
      Value* x = t.Param(Type{elem, nullptr, {e}});
      auto values = t.Call({t.b.Unary(kind, x)},
                           {Tensor::FloatArray(elem, {e}, {12}, points)});
      REQUIRE(static_cast<bool>(values));
      for (size_t i = 0; i < points.size(); ++i) {
        double expected =
            elem == ElemKind::F64
                ? f64(points[i])
                : static_cast<double>(f32(static_cast<float>(points[i])));
        double actual = (*values)[0].floats[i];
        INFO(name << "(" << points[i] << ") in " << ElemName(elem).str() << ": "
                  << actual << ", libm " << expected);
        CHECK((actual == expected ||
               (std::isnan(actual) && std::isnan(expected))));
      }
    }
  }
}

// The same for the binary ones (pow, atan2), at every pair of points.
TEST_CASE("every binary libm op computes the C library's function") {
  const std::vector<double> values = {0.0, -0.0, 0.5, -2.0, 3.0, kInf, kNan};
  std::vector<double> a;
  std::vector<double> b;
  for (double x : values)
    for (double y : values) {
      a.push_back(x);
      b.push_back(y);
    }
  std::vector<OpKind> kinds;
#define DELTA_OP(Name, ...)                                              \
  if (HasFlag(OpKind::Name, kLibm) && IsElementwiseBinary(OpKind::Name)) \
    kinds.push_back(OpKind::Name);
#include "compiler/ir/ops.def"
  CHECK(kinds.size() >= 2);
  for (OpKind kind : kinds) {
    std::string name = OpMnemonic(kind).str();
    auto* f64 = reinterpret_cast<double (*)(double, double)>(
        dlsym(RTLD_DEFAULT, name.c_str()));
    INFO("libm function " << name);
    REQUIRE((f64 != nullptr));
    Fixture t;
    auto count = static_cast<int64_t>(a.size());
    Dim* e = t.module.AddDim("e", count);
    Value* x = t.Param(F64({e}));
    Value* y = t.Param(F64({e}));
    auto results = t.Call({t.b.Binary(kind, x, y)},
                          {Tensor::FloatArray(ElemKind::F64, {e}, {count}, a),
                           Tensor::FloatArray(ElemKind::F64, {e}, {count}, b)});
    REQUIRE(static_cast<bool>(results));
    for (size_t i = 0; i < a.size(); ++i) {
      double expected = f64(a[i], b[i]);
      double actual = (*results)[0].floats[i];
      INFO(name << "(" << a[i] << ", " << b[i] << "): " << actual << ", libm "
                << expected);
      CHECK(
          (actual == expected || (std::isnan(actual) && std::isnan(expected))));
    }
  }
}

TEST_CASE("collectives of a sharded dim on one process") {
  // Without mpirun a sharded program is one process: the whole dim is its
  // block (lang-tests/distributed/ runs 2 and 3 processes).
  Fixture t;
  Dim* a = t.module.AddDim("a", 3);
  a->sharded = true;
  a->global_constant = a->constant;
  a->constant.reset();
  Value* x = t.Param(F32({a}));
  Op* largest = t.b.Create(OpKind::Allreduce,
                           {t.b.Reduce(ReduceKind::Max, x, {a})}, {F32()});
  largest->reduce = ReduceKind::Max;
  Op* before = t.b.Create(OpKind::Exscan, {x}, {F32({a})});
  Op* offset = t.b.Create(OpKind::ShardOffset, {}, {I64()});
  offset->dims = {a};
  CHECK(t.Run({largest->result(), before->result(), offset->result(),
               t.b.Size(a)},
              {Tensor::FloatArray(ElemKind::F32, {a}, {3}, {1, 5, 2})}) ==
        std::vector<std::string>{"5", "[a=3] [0, 0, 0]", "0", "3"});
}

TEST_CASE("every op in ops.def is executed by some test") {
  std::vector<OpKind> kinds = {
#define DELTA_OP(Name, ...) OpKind::Name,
#include "compiler/ir/ops.def"
  };
  for (OpKind kind : kinds) {
    INFO("op " << OpMnemonic(kind).str());
    CHECK(covered_kinds.count(kind) == 1);
  }
}
