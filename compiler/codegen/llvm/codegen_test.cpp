// Tests of native code generation: IR modules built by hand are compiled
// with the JIT (in a child process, to capture output and exit status) and
// as executables, and their output is compared with what the IR means.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/lsan_interface.h>
#define DELTA_TEST_LEAKS 1
#endif
#endif

#include <doctest/doctest.h>
#include <fcntl.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/FileUtilities.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "compiler/codegen/interpreter/interpreter.h"
#include "compiler/codegen/llvm/codegen.h"
#include "compiler/codegen/llvm/emitter.h"
#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/llvm/object.h"
#include "compiler/ir/builder.h"
#include "compiler/ir/verifier.h"

using namespace delta;
using namespace delta::ir;

namespace {

struct RunResult {
  int status = -1;
  std::string out;
  std::string err;
};

std::string ReadAll(int fd) {
  std::string text;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fd, buffer, sizeof buffer)) > 0) text.append(buffer, n);
  return text;
}

// Runs `body` in a child process with stdout and stderr captured.
RunResult InChild(const std::function<int()>& body) {
  int out[2], err[2];
  REQUIRE(pipe(out) == 0);
  REQUIRE(pipe(err) == 0);
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    dup2(out[1], 1);
    dup2(err[1], 2);
    close(out[0]);
    close(err[0]);
    int status = body();
    std::fflush(stdout);
    std::fflush(stderr);
    _exit(status);
  }
  close(out[1]);
  close(err[1]);
  RunResult result;
  // Outputs are small, so reading one pipe after the other cannot block.
  result.out = ReadAll(out[0]);
  result.err = ReadAll(err[0]);
  close(out[0]);
  close(err[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return result;
}

// The interpreter's output and error message, the oracle for the JIT.
RunResult Interpret(const Module& module) {
  RunResult result;
  llvm::raw_string_ostream out(result.out);
  if (llvm::Error error = interpreter::RunMain(module, out)) {
    result.status = 1;
    result.err = llvm::toString(std::move(error)) + "\n";
  } else {
    result.status = 0;
  }
  return result;
}

// Runs `main` with the JIT in a child process and checks that its output,
// error and status are the interpreter's.
RunResult Jit(const Module& module, int opt_level = 2) {
  auto errors = Verify(module);
  for (const std::string& error : errors) FAIL_CHECK(error);
  RunResult result = InChild([&] {
    codegen::CodegenOptions options;
    options.opt_level = opt_level;
    std::string error;
    if (!codegen::RunMain(module, options, error)) {
      std::fprintf(stderr, "jit: %s\n", error.c_str());
      return 3;
    }
#ifdef DELTA_TEST_LEAKS
    // The child leaves with _exit, so LSan would not look at the buffers
    // the generated code failed to free; ask it here.
    if (__lsan_do_recoverable_leak_check() != 0) return 4;
#endif
    return 0;
  });
  RunResult expected = Interpret(module);
  CHECK(result.out == expected.out);
  CHECK(result.err == expected.err);
  CHECK(result.status == expected.status);
  return result;
}

std::string EmitText(const Module& module, int opt_level = 2) {
  llvm::LLVMContext context;
  codegen::CodegenOptions options;
  options.opt_level = opt_level;
  auto llvm_module = codegen::EmitLLVM(module, context, options);
  std::string text;
  llvm::raw_string_ostream out(text);
  llvm_module->print(out, nullptr);
  return text;
}

Type Scalar(ElemKind elem) { return Type{elem, nullptr, {}}; }
Type Array(ElemKind elem, DimList dims) { return Type{elem, nullptr, dims}; }

using PrintArg = std::variant<std::string, Value*>;

// print with the arguments separated by spaces, as lowering writes it.
void Print(Builder& b, const std::vector<PrintArg>& args) {
  std::vector<Value*> operands;
  std::vector<PrintItem> items;
  for (const PrintArg& arg : args) {
    if (!items.empty()) items.push_back(PrintItem{false, " "});
    PrintItem item;
    if (auto* value = std::get_if<Value*>(&arg)) {
      item.is_value = true;
      operands.push_back(*value);
    } else {
      item.text = std::get<std::string>(arg);
    }
    items.push_back(item);
  }
  Op* op = b.Create(OpKind::Print, operands, {});
  op->print_items = items;
}

// map [dims] { ^(indices): yield body(indices) } with a scalar yield.
Value* Map(Builder& b, std::vector<const Dim*> dims, ElemKind elem,
           const std::function<Value*(std::vector<Value*>)>& body) {
  Op* map = b.Create(OpKind::Map, {}, {Array(elem, DimList(dims))});
  map->dims = dims;
  std::vector<Type> arg_types;
  for (const Dim* dim : dims)
    arg_types.push_back(Type{ElemKind::Index, dim, {}});
  Block* region = b.AddRegion(map, arg_types);
  InsertionGuard guard(b);
  b.SetInsertionBlock(region);
  b.Yield({body(region->args)});
  return map->result();
}

// An f32 array over `dims` whose element is f32(sum of the indices) * scale.
Value* Ramp(Builder& b, std::vector<const Dim*> dims, double scale = 1.0) {
  return Map(b, dims, ElemKind::F32, [&](std::vector<Value*> indices) {
    Value* total = b.IntConst(ElemKind::I64, 0);
    for (Value* index : indices)
      total = b.Binary(OpKind::Add, total, b.Convert(index, ElemKind::I64));
    return b.Binary(OpKind::Mul, b.Convert(total, ElemKind::F32),
                    b.FloatConst(ElemKind::F32, scale));
  });
}

Function* Main(Module& module) {
  Function* main = module.AddFunction("main");
  return main;
}

}  // namespace

TEST_CASE("a map, a reduction and a print run through the JIT") {
  Module module;
  Dim* d = module.AddDim("d", 8);
  Function* main = Main(module);
  Builder b(main);
  Value* x = Ramp(b, {d});
  Value* s = b.Reduce(ReduceKind::Sum, x, {d});
  Print(b, {std::string("s:"), s, x});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.err == "");
  CHECK(result.status == 0);
  CHECK(result.out == "s: 28 [d=8] [0, 1, 2, 3, 4, 5, 6, 7]\n");
}

TEST_CASE("a fused map-reduce runs as one loop without a temporary array") {
  // sum(exp(x) * y + 1.0, d) with x, y computed from the index: the reduce
  // has a region, so there is no array between the map and the sum.
  Module module;
  Dim* d = module.AddDim("d", 1000);
  Function* main = Main(module);
  Builder b(main);
  Op* reduce = b.Create(OpKind::Reduce, {}, {Scalar(ElemKind::F32)});
  reduce->reduce = ReduceKind::Sum;
  reduce->dims = {d};
  Block* region = b.AddRegion(reduce, {Type{ElemKind::Index, d, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(region);
    Value* x = b.Binary(OpKind::Mul, b.Convert(region->args[0], ElemKind::F32),
                        b.FloatConst(ElemKind::F32, 0.001));
    Value* y = b.FloatConst(ElemKind::F32, 2.0);
    b.Yield({b.Binary(OpKind::Add,
                      b.Binary(OpKind::Mul, b.Unary(OpKind::Exp, x), y),
                      b.FloatConst(ElemKind::F32, 1.0))});
  }
  Print(b, {reduce->result()});
  b.Return({});
  std::string text = EmitText(module);
  CHECK(text.find("delta_alloc") == std::string::npos);
  RunResult result = Jit(module);
  CHECK(result.status == 0);
  // 2 * sum(exp(k / 1000)) + 1000 for k < 1000, about 4434.85.
  double value = std::stod(result.out);
  CHECK(value == doctest::Approx(4434.85).epsilon(1e-4));
}

TEST_CASE("elementwise ops broadcast by name and print in canonical order") {
  Module module;
  Dim* a = module.AddDim("a", 2);
  Dim* c = module.AddDim("c", 3);
  Function* main = Main(module);
  Builder b(main);
  Value* x = Ramp(b, {a}, 10.0);                         // [0, 10]
  Value* y = Ramp(b, {c});                               // [0, 1, 2]
  Value* sum = b.Binary(OpKind::Add, y, x);              // f32[a, c]
  Value* columns = b.Reduce(ReduceKind::Sum, sum, {a});  // over the outer dim
  Value* rows = b.Reduce(ReduceKind::Max, sum, {c});
  Value* total = b.Reduce(
      ReduceKind::Prod,
      b.Binary(OpKind::Add, sum, b.FloatConst(ElemKind::F32, 1.0)), {a, c});
  Print(b, {sum, columns, rows, total});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.status == 0);
  CHECK(result.out ==
        "[a=2, c=3] [[0, 1, 2], [10, 11, 12]] [c=3] [10, 12, 14] [a=2] "
        "[2, 12] 10296\n");
  CHECK(Jit(module, 0).out == result.out);
}

TEST_CASE("an out-of-range to_index is a run-time error with its location") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  Function* main = Main(module);
  Builder b(main);
  Print(b, {std::string("before")});
  b.SetLoc(Loc{"test.dl", 3, 5, {}});
  Value* i = b.ToIndex(d, b.IntConst(ElemKind::I64, 5));
  b.SetLoc(Loc{});
  Print(b, {i});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.status == 1);
  CHECK(result.out == "before\n");
  CHECK(result.err ==
        "test.dl:3:5: error: index 5 is out of range for dim d of size 4\n");
}

TEST_CASE("integer division by zero and a negative dim size are errors") {
  for (OpKind kind : {OpKind::Div, OpKind::Rem}) {
    Module module;
    Function* main = Main(module);
    Builder b(main);
    Dim* d = module.AddDim("d", 3);
    // The divisor is computed from an index so that LLVM cannot fold it.
    Value* divisors = Map(b, {d}, ElemKind::I32, [&](std::vector<Value*> i) {
      return b.Convert(i[0], ElemKind::I32);
    });
    b.SetLoc(Loc{"div.dl", 7, 12, {}});
    Value* q = b.Binary(kind, b.IntConst(ElemKind::I32, 7), divisors);
    Print(b, {q});
    b.Return({});
    RunResult result = Jit(module);
    CHECK(result.status == 1);
    CHECK(result.err == "div.dl:7:12: error: integer division by zero\n");
  }
  Module module;
  Function* main = Main(module);
  Builder b(main);
  Dim* local = main->NewDim("t", std::nullopt, nullptr);
  b.SetLoc(Loc{"dim.dl", 2, 3, {}});
  b.DimDef(local, b.Binary(OpKind::Sub, b.IntConst(ElemKind::I64, 2),
                           b.IntConst(ElemKind::I64, 5)));
  Print(b, {b.Size(local)});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.status == 1);
  CHECK(result.err == "dim.dl:2:3: error: size -3 of dim t is negative\n");
}

TEST_CASE("integer arithmetic wraps and float conversion saturates") {
  Module module;
  Function* main = Main(module);
  Builder b(main);
  Value* min = b.IntConst(ElemKind::I32, -2147483648LL);
  Value* minus_one = b.IntConst(ElemKind::I32, -1);
  Value* big = b.FloatConst(ElemKind::F64, 1e10);
  Value* nan = b.Binary(OpKind::Div, b.FloatConst(ElemKind::F64, 0.0),
                        b.FloatConst(ElemKind::F64, 0.0));
  Print(b, {b.Binary(OpKind::Div, min, minus_one),
            b.Binary(OpKind::Rem, min, minus_one),
            b.Binary(OpKind::Add, b.IntConst(ElemKind::I32, 2147483647),
                     b.IntConst(ElemKind::I32, 1)),
            b.Binary(OpKind::Div, b.IntConst(ElemKind::I64, -7),
                     b.IntConst(ElemKind::I64, 2)),
            b.Binary(OpKind::Rem, b.IntConst(ElemKind::I64, -7),
                     b.IntConst(ElemKind::I64, 2)),
            b.Convert(big, ElemKind::I32), b.Convert(nan, ElemKind::I64),
            b.Convert(b.FloatConst(ElemKind::F32, -2.7), ElemKind::I64),
            b.Binary(OpKind::Max, nan, b.FloatConst(ElemKind::F64, 1.0)),
            b.Unary(OpKind::Relu, b.FloatConst(ElemKind::F32, -1.5)),
            b.Unary(OpKind::Sigmoid, b.FloatConst(ElemKind::F64, 0.0)),
            b.Unary(OpKind::Tanh, b.FloatConst(ElemKind::F32, 0.0))});
  b.Return({});
  for (int opt_level : {0, 2}) {
    RunResult result = Jit(module, opt_level);
    CHECK(result.status == 0);
    CHECK(result.out ==
          "-2147483648 0 -2147483648 -3 -1 2147483647 0 -2 nan 0 0.5 0\n");
  }
}

TEST_CASE("loops, while, if and calls with size parameters") {
  Module module;
  Dim* n = module.AddDim("n", 4);
  // fn scale[m](x: f32[m], k: f32) -> (f32[m], f32): (x * k, sum(x * k, m))
  Function* scale = module.AddFunction("scale");
  Value* m_size = scale->NewValue(Scalar(ElemKind::I64), "m");
  Dim* m = scale->NewDim("m", std::nullopt, m_size);
  scale->size_params.push_back(m_size);
  Value* x = scale->NewValue(Array(ElemKind::F32, {m}), "x");
  Value* k = scale->NewValue(Scalar(ElemKind::F32), "k");
  for (Value* param : {x, k}) {
    param->block = scale->body.get();
    param->index = static_cast<unsigned>(scale->params.size());
    scale->params.push_back(param);
    scale->body->args.push_back(param);
  }
  {
    Builder b(scale);
    Value* scaled = b.Binary(OpKind::Mul, x, k);
    Value* total = b.Reduce(ReduceKind::Sum, scaled, {m});
    scale->result_types = {scaled->type, total->type};
    b.Return({scaled, total});
  }

  Function* main = Main(module);
  Builder b(main);
  Value* x0 = Ramp(b, {n});  // [0, 1, 2, 3]
  // loop acc = x0 for i in 0..3 { acc * 2 }: the state is an array.
  Op* loop =
      b.Create(OpKind::Loop,
               {b.IntConst(ElemKind::I64, 0), b.IntConst(ElemKind::I64, 3), x0},
               {x0->type});
  Block* body = b.AddRegion(loop, {Scalar(ElemKind::I64), x0->type});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    b.Yield({b.Binary(OpKind::Mul, body->args[1],
                      b.FloatConst(ElemKind::F32, 2.0))});
  }
  // while s < 100 { s * 3 } from 1.
  Op* loop2 = b.Create(OpKind::While, {b.IntConst(ElemKind::I64, 1)},
                       {Scalar(ElemKind::I64)});
  Block* cond = b.AddRegion(loop2, {Scalar(ElemKind::I64)});
  Block* body2 = b.AddRegion(loop2, {Scalar(ElemKind::I64)});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(cond);
    b.Yield(
        {b.Binary(OpKind::Lt, cond->args[0], b.IntConst(ElemKind::I64, 100))});
    b.SetInsertionBlock(body2);
    b.Yield(
        {b.Binary(OpKind::Mul, body2->args[0], b.IntConst(ElemKind::I64, 3))});
  }
  // if s > 200 { x0 } else { loop result }: both branches yield arrays
  // owned elsewhere, so they are copied.
  Op* branch = b.Create(
      OpKind::If,
      {b.Binary(OpKind::Gt, loop2->result(), b.IntConst(ElemKind::I64, 200))},
      {x0->type});
  Block* then_block = b.AddRegion(branch, {});
  Block* else_block = b.AddRegion(branch, {});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(then_block);
    b.Yield({x0});
    b.SetInsertionBlock(else_block);
    b.Yield({loop->result()});
  }
  Op* call = b.Create(OpKind::Call,
                      {branch->result(), b.FloatConst(ElemKind::F32, 0.5)},
                      {x0->type, Scalar(ElemKind::F32)});
  call->callee = scale;
  call->dims = {n};
  Print(b, {loop->result(), loop2->result(), branch->result(), call->result(0),
            call->result(1)});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.err == "");
  CHECK(result.out ==
        "[n=4] [0, 8, 16, 24] 243 [n=4] [0, 1, 2, 3] [n=4] [0, 0.5, 1, 1.5] "
        "3\n");
}

TEST_CASE("gather, rename, cumsum, iota, broadcast, select, argmax") {
  Module module;
  Dim* a = module.AddDim("a", 3);
  Dim* c = module.AddDim("c", 3);
  Dim* e = module.AddDim("e", 2);
  Function* main = Main(module);
  Builder b(main);
  Value* x = Ramp(b, {a});  // [0, 1, 2]
  // Indices into a, over e: [2, 0].
  Value* index = Map(b, {e}, ElemKind::I64, [&](std::vector<Value*> i) {
    return b.Binary(OpKind::Mul,
                    b.Binary(OpKind::Sub, b.IntConst(ElemKind::I64, 1),
                             b.Convert(i[0], ElemKind::I64)),
                    b.IntConst(ElemKind::I64, 2));
  });
  Value* gathered = b.Gather(x, {b.ToIndex(a, index)});
  Value* renamed = b.Rename(x, a, c);
  Value* table = b.Binary(OpKind::Sub, x, renamed);  // [a, c]: a - c
  Value* scan = b.Cumsum(x, a);
  Value* iota = b.Iota(e);
  Value* wide = b.Broadcast(b.FloatConst(ElemKind::F32, 1.5), {e});
  Value* chosen =
      b.Select(b.Binary(OpKind::Gt, table, b.FloatConst(ElemKind::F32, 0.0)),
               table, b.FloatConst(ElemKind::F32, -1.0));
  Value* best = b.Reduce(ReduceKind::Argmax, chosen, {c});
  Value* worst = b.Reduce(ReduceKind::Argmin, chosen, {a});
  Print(b, {gathered, table, scan, iota, wide, chosen, best, worst});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.err == "");
  CHECK(result.out ==
        "[e=2] [2, 0] [a=3, c=3] [[0, -1, -2], [1, 0, -1], [2, 1, 0]] "
        "[a=3] [0, 1, 3] [e=2] [0, 1] [e=2] [1.5, 1.5] "
        "[a=3, c=3] [[-1, -1, -1], [1, -1, -1], [2, 1, -1]] "
        "[a=3] [0, 0, 0] [c=3] [0, 0, 0]\n");
}

namespace {

// A function that uses an op of `kind` (the walk over ops.def below).
// The file an npy example writes and reads: in the temp folder, so that a
// test run leaves nothing in the working tree.
std::string NpyExamplePath(OpKind kind) {
  llvm::SmallString<128> path;
  llvm::sys::path::system_temp_directory(true, path);
  llvm::sys::path::append(path, "codegen_test_npy_" +
                                    std::to_string(::getpid()) + "_" +
                                    OpMnemonic(kind).str() + ".npy");
  return path.str().str();
}

void BuildExample(Module& module, OpKind kind) {
  Dim* a = module.AddDim("a", 3);
  Dim* c = module.AddDim("c", 2);
  Function* main = Main(module);
  Builder b(main);
  Value* x = Ramp(b, {a, c}, 0.5);
  Value* y = Ramp(b, {c});
  Value* flags = b.Binary(OpKind::Gt, x, b.FloatConst(ElemKind::F32, 1.0));
  Value* ints = b.Convert(x, ElemKind::I64);
  std::vector<Value*> printed;
  auto region_op = [&](OpKind op_kind, std::vector<Value*> operands,
                       std::vector<Type> results) {
    return b.Create(op_kind, std::move(operands), std::move(results));
  };
  auto index_type = [](const Dim* dim) {
    return Type{ElemKind::Index, dim, {}};
  };
  switch (kind) {
    case OpKind::Not:
      printed.push_back(b.Unary(kind, flags));
      break;
    case OpKind::Convert:
      printed.push_back(b.Convert(x, ElemKind::I32));
      break;
    case OpKind::Div:
    case OpKind::Rem:
      printed.push_back(b.Binary(kind, ints, b.IntConst(ElemKind::I64, 2)));
      printed.push_back(b.Binary(kind, x, y));
      break;
    case OpKind::And:
    case OpKind::Or:
      printed.push_back(b.Binary(kind, flags, b.BoolConst(true)));
      break;
    case OpKind::Select:
      printed.push_back(b.Select(flags, x, y));
      break;
    case OpKind::Const:
      printed.push_back(b.FloatConst(ElemKind::F64, 0.25));
      break;
    case OpKind::Size:
      printed.push_back(b.Size(a));
      break;
    case OpKind::Iota:
      printed.push_back(b.Iota(a));
      break;
    case OpKind::ToIndex:
      printed.push_back(b.ToIndex(a, b.IntConst(ElemKind::I64, 2)));
      break;
    case OpKind::Broadcast:
      printed.push_back(b.Broadcast(y, {a}));
      break;
    case OpKind::Rename: {
      Dim* a2 = module.AddDim("a2", 3);
      printed.push_back(b.Rename(x, a, a2));
      break;
    }
    case OpKind::Gather:
      printed.push_back(
          b.Gather(x, {b.ToIndex(c, b.IntConst(ElemKind::I64, 1))}));
      break;
    case OpKind::ScatterAdd: {
      Value* at =
          b.Gather(b.Iota(c), {b.ToIndex(c, b.IntConst(ElemKind::I64, 1))});
      printed.push_back(b.ScatterAdd(Ramp(b, {a}), {b.Broadcast(at, {a})},
                                     Array(ElemKind::F32, {c})));
      break;
    }
    case OpKind::Reduce:
      for (ReduceKind reduce :
           {ReduceKind::Sum, ReduceKind::Prod, ReduceKind::Max, ReduceKind::Min,
            ReduceKind::Argmax, ReduceKind::Argmin})
        printed.push_back(b.Reduce(reduce, x, {a}));
      printed.push_back(b.Reduce(ReduceKind::Sum, x, {a, c}));
      break;
    case OpKind::ReduceCustom: {
      Op* op = region_op(kind, {b.FloatConst(ElemKind::F32, 0.0), x},
                         {Array(ElemKind::F32, {c})});
      op->dims = {a};
      Block* region =
          b.AddRegion(op, {Scalar(ElemKind::F32), Scalar(ElemKind::F32)});
      InsertionGuard guard(b);
      b.SetInsertionBlock(region);
      b.Yield({b.Binary(OpKind::Add, region->args[0], region->args[1])});
      printed.push_back(op->result());
      break;
    }
    case OpKind::Cumsum:
      printed.push_back(b.Cumsum(x, a));
      break;
    case OpKind::Map:
      printed.push_back(Ramp(b, {c, a}));
      break;
    case OpKind::Loop: {
      // A loop over a dim with a stacked output (a scan).
      Op* op = region_op(kind, {b.IntConst(ElemKind::I64, 0), b.Size(a), y},
                         {y->type, x->type});
      op->dims = {a};
      Block* region = b.AddRegion(op, {index_type(a), y->type});
      InsertionGuard guard(b);
      b.SetInsertionBlock(region);
      Value* next = b.Binary(OpKind::Add, region->args[1],
                             b.Convert(region->args[0], ElemKind::F32));
      b.Yield({next, next});
      printed.push_back(op->result(0));
      printed.push_back(op->result(1));
      break;
    }
    case OpKind::While: {
      Op* op = region_op(kind, {y}, {y->type});
      Block* cond = b.AddRegion(op, {y->type});
      Block* body = b.AddRegion(op, {y->type});
      InsertionGuard guard(b);
      b.SetInsertionBlock(cond);
      b.Yield(
          {b.Binary(OpKind::Lt, b.Reduce(ReduceKind::Sum, cond->args[0], {c}),
                    b.FloatConst(ElemKind::F32, 10.0))});
      b.SetInsertionBlock(body);
      b.Yield({b.Binary(OpKind::Add, body->args[0],
                        b.FloatConst(ElemKind::F32, 1.0))});
      printed.push_back(op->result());
      break;
    }
    case OpKind::If: {
      Op* op = region_op(kind, {b.BoolConst(false)}, {y->type});
      Block* then_block = b.AddRegion(op, {});
      Block* else_block = b.AddRegion(op, {});
      InsertionGuard guard(b);
      b.SetInsertionBlock(then_block);
      b.Yield({y});
      b.SetInsertionBlock(else_block);
      b.Yield({b.Unary(OpKind::Neg, y)});
      printed.push_back(op->result());
      break;
    }
    case OpKind::Call: {
      Function* callee = module.AddFunction("twice");
      Value* param = callee->NewValue(y->type, "v");
      param->block = callee->body.get();
      callee->params.push_back(param);
      callee->body->args.push_back(param);
      callee->result_types = {y->type};
      Builder cb(callee);
      cb.Return({cb.Binary(OpKind::Add, param, param)});
      Op* op = region_op(kind, {y}, {y->type});
      op->callee = callee;
      printed.push_back(op->result());
      break;
    }
    case OpKind::DimDef: {
      Dim* t = main->NewDim("t", std::nullopt, nullptr);
      b.DimDef(t, b.IntConst(ElemKind::I64, 2));
      printed.push_back(Ramp(b, {t}));
      break;
    }
    case OpKind::ReadNpy:
    case OpKind::WriteNpy: {
      // A round trip through a file: x written with axes (c, a), read back.
      std::string path = NpyExamplePath(kind);
      Op* write = b.Create(OpKind::WriteNpy, {x}, {});
      write->dims = {c, a};
      write->print_items = {{false, path}};
      Op* read = b.Create(OpKind::ReadNpy, {}, {x->type});
      read->dims = write->dims;
      read->print_items = {{false, path}};
      printed.push_back(read->result());
      break;
    }
    case OpKind::Allreduce:
    case OpKind::Exscan: {
      // One process: allreduce gives x, exscan zeros (the multi-process
      // runs are lang-tests/distributed/).
      Op* collective = b.Create(kind, {x}, {x->type});
      collective->reduce = ReduceKind::Max;
      printed.push_back(collective->result());
      break;
    }
    case OpKind::ShardOffset: {
      // A sharded dim after the distribute step: its size is global.
      Dim* s = module.AddDim("s", 5);
      s->sharded = true;
      s->global_constant = s->constant;
      s->constant.reset();
      Op* offset = b.Create(kind, {}, {Type{ElemKind::I64, nullptr, {}}});
      offset->dims = {s};
      printed.push_back(offset->result());
      printed.push_back(b.Size(s));
      printed.push_back(Ramp(b, {s}));
      break;
    }
    case OpKind::Print:
    case OpKind::Yield:
    case OpKind::Return:
      break;  // every example prints, maps yield and functions return
    default:
      // A new op that is not elementwise needs an example above.
      REQUIRE_MESSAGE(
          (ir::IsElementwiseUnary(kind) || ir::IsElementwiseBinary(kind)),
          "no example for " << OpMnemonic(kind).str());
      if (ir::IsElementwiseUnary(kind))
        printed.push_back(b.Unary(kind, x));
      else
        printed.push_back(b.Binary(kind, x, y));
      break;
  }
  std::vector<PrintArg> args;
  for (Value* value : printed) args.push_back(value);
  Print(b, args);
  b.Return({});
}

}  // namespace

TEST_CASE("every op of ops.def compiles and runs") {
  for (int i = 0; i <= static_cast<int>(OpKind::Return); ++i) {
    OpKind kind = static_cast<OpKind>(i);
    CAPTURE(OpMnemonic(kind).str());
    Module module;
    BuildExample(module, kind);
    CHECK(EmitText(module, 0).find("delta.main") != std::string::npos);
    RunResult result = Jit(module);
    CHECK(result.err == "");
    CHECK(result.status == 0);
    if (kind == OpKind::ReadNpy || kind == OpKind::WriteNpy)
      llvm::sys::fs::remove(NpyExamplePath(kind));
  }
}

TEST_CASE("an executable prints, and stops with status 1 on a run-time error") {
  Module module;
  Dim* d = module.AddDim("d", 4);
  Function* main = Main(module);
  Builder b(main);
  Value* x = Ramp(b, {d}, 0.25);
  Print(b, {std::string("x:"), x, b.Reduce(ReduceKind::Sum, x, {d})});
  b.SetLoc(Loc{"exe.dl", 9, 2, {}});
  Print(b, {b.ToIndex(d, b.Size(d))});
  b.Return({});

  llvm::LLVMContext context;
  codegen::CodegenOptions options;
  options.emit_c_main = true;
  auto llvm_module = codegen::EmitLLVM(module, context, options);
  llvm::SmallString<128> object, program;
  REQUIRE(!llvm::sys::fs::createTemporaryFile("codegen_test", "o", object));
  REQUIRE(!llvm::sys::fs::createTemporaryFile("codegen_test", "", program));
  llvm::FileRemover remove_object(object), remove_program(program);
  {
    std::error_code error;
    llvm::raw_fd_ostream out(object, error);
    REQUIRE(!error);
    std::string message;
    REQUIRE(codegen::EmitMachineCode(
        *llvm_module, 2, llvm::CodeGenFileType::ObjectFile, out, message));
  }
  static int anchor;
  std::string runtime = codegen::FindRuntimeLibrary(
      llvm::sys::fs::getMainExecutable(nullptr, &anchor));
  std::string error;
  REQUIRE_MESSAGE(codegen::LinkExecutable({object.str().str()},
                                          program.str().str(), runtime, error),
                  error);
  RunResult result = InChild([&] {
    execl(program.c_str(), program.c_str(), static_cast<char*>(nullptr));
    return 127;
  });
  CHECK(result.status == 1);
  CHECK(result.out == "x: [d=4] [0, 0.25, 0.5, 0.75] 1.5\n");
  CHECK(result.err ==
        "exe.dl:9:2: error: index 4 is out of range for dim d of size 4\n");
}

TEST_CASE("a trivial program JIT-compiles and runs quickly") {
  Module module;
  Function* main = Main(module);
  Builder b(main);
  Print(b, {std::string("hello"), b.IntConst(ElemKind::I64, 42)});
  b.Return({});
  auto start = std::chrono::steady_clock::now();
  RunResult result = InChild([&] {
    std::string error;
    return codegen::RunMain(module, codegen::CodegenOptions{}, error) ? 0 : 3;
  });
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count();
  CHECK(result.out == "hello 42\n");
  MESSAGE("JIT compile and run of a trivial program: " << ms << " ms");
  // The contract is 300 ms for all of `dlc run`; sanitizer builds are slower.
  CHECK(ms < 1000);
}

TEST_CASE("regions that yield arrays: map slices, folds and scans") {
  Module module;
  Dim* a = module.AddDim("a", 3);
  Dim* c = module.AddDim("c", 2);
  Function* main = Main(module);
  Builder b(main);
  Value* y = Ramp(b, {c});  // [0, 1]
  // map [a] { ^(i): yield f32(i) + y }: each point yields an f32[c].
  Op* map = b.Create(OpKind::Map, {}, {Array(ElemKind::F32, {a, c})});
  map->dims = {a};
  Block* body = b.AddRegion(map, {Type{ElemKind::Index, a, {}}});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(body);
    b.Yield(
        {b.Binary(OpKind::Add, b.Convert(body->args[0], ElemKind::F32), y)});
  }
  Value* rows = map->result();
  // reduce.custom [a] over whole rows: elementwise max of the rows.
  Op* fold =
      b.Create(OpKind::ReduceCustom,
               {b.Broadcast(b.FloatConst(ElemKind::F32, -100.0), {c}), rows},
               {Array(ElemKind::F32, {c})});
  fold->dims = {a};
  Block* combine = b.AddRegion(fold, {y->type, y->type});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(combine);
    b.Yield({b.Binary(OpKind::Max, combine->args[0], combine->args[1])});
  }
  // A scan over a whose stacked output is an array.
  Op* scan =
      b.Create(OpKind::Loop, {b.IntConst(ElemKind::I64, 0), b.Size(a), y},
               {y->type, rows->type});
  scan->dims = {a};
  Block* step = b.AddRegion(scan, {Type{ElemKind::Index, a, {}}, y->type});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(step);
    Value* next =
        b.Binary(OpKind::Mul, step->args[1], b.FloatConst(ElemKind::F32, 2.0));
    b.Yield({next, step->args[1]});
  }
  // scatter_add with colliding indices: all of `rows` lands on c = 1.
  Value* at = b.Broadcast(b.ToIndex(c, b.IntConst(ElemKind::I64, 1)), {a});
  Value* scattered = b.ScatterAdd(b.Reduce(ReduceKind::Sum, rows, {c}), {at},
                                  Array(ElemKind::F32, {c}));
  Print(b, {rows, fold->result(), scan->result(0), scan->result(1), scattered});
  b.Return({});
  RunResult result = Jit(module);
  CHECK(result.out ==
        "[a=3, c=2] [[0, 1], [1, 2], [2, 3]] [c=2] [2, 3] [c=2] [0, 8] "
        "[a=3, c=2] [[0, 1], [0, 2], [0, 4]] [c=2] [0, 9]\n");
}

TEST_CASE("a scan's stacked map result is written into its slice") {
  // loop s = 0 for k in d { (s + 1, for j in e { s + j }) }: the map's
  // array goes straight into row k of the stack (Note [Scan outputs in
  // place]), so the only array allocated is the stack itself.
  Module module;
  Dim* d = module.AddDim("d", 4);
  Dim* e = module.AddDim("e", 3);
  Function* main = Main(module);
  Builder b(main);
  Type scalar = Scalar(ElemKind::F32);
  Op* scan = b.Create(
      OpKind::Loop,
      {b.IntConst(ElemKind::I64, 0), b.Size(d), b.FloatConst(ElemKind::F32, 0)},
      {scalar, Array(ElemKind::F32, {d, e})});
  scan->dims = {d};
  Block* step = b.AddRegion(scan, {Type{ElemKind::Index, d, {}}, scalar});
  {
    InsertionGuard guard(b);
    b.SetInsertionBlock(step);
    Op* map = b.Create(OpKind::Map, {}, {Array(ElemKind::F32, {e})});
    map->dims = {e};
    Block* point = b.AddRegion(map, {Type{ElemKind::Index, e, {}}});
    {
      InsertionGuard inner(b);
      b.SetInsertionBlock(point);
      b.Yield({b.Binary(OpKind::Add, step->args[1],
                        b.Convert(point->args[0], ElemKind::F32))});
    }
    b.Yield(
        {b.Binary(OpKind::Add, step->args[1], b.FloatConst(ElemKind::F32, 1.0)),
         map->result()});
  }
  Print(b, {scan->result(1)});
  b.Return({});
  std::string text = EmitText(module);
  size_t calls = 0;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (line.find("@delta_alloc(") != std::string::npos &&
        line.rfind("declare", 0) != 0)
      ++calls;
  CHECK(calls == 1);
  RunResult result = Jit(module);
  CHECK(result.out ==
        "[d=4, e=3] [[0, 1, 2], [1, 2, 3], [2, 3, 4], [3, 4, 5]]\n");
}

TEST_CASE("a small dim that maps have last is laid out outermost") {
  // Note [Small dims outermost]: a map over [n, c] with c = 2 last would
  // store with a stride of 2; c is moved outermost. A map whose last dim
  // is large, or whose n is too short to vectorize, votes for nothing.
  struct Case {
    int64_t n, c;
    bool moved;
  };
  for (Case test :
       {Case{64, 2, true}, Case{64, 64, false}, Case{8, 2, false}}) {
    Module module;
    Dim* n = module.AddDim("n", test.n);
    Dim* c = module.AddDim("c", test.c);
    Function* f = module.AddFunction("f");
    Builder b(f);
    Op* map = b.Create(OpKind::Map, {}, {Array(ElemKind::F64, {n, c})});
    map->dims = {n, c};
    Block* body = b.AddRegion(
        map, {Type{ElemKind::Index, n, {}}, Type{ElemKind::Index, c, {}}});
    {
      InsertionGuard guard(b);
      b.SetInsertionBlock(body);
      b.Yield({b.Binary(OpKind::Add, b.Convert(body->args[0], ElemKind::F64),
                        b.Convert(body->args[1], ElemKind::F64))});
    }
    b.Return({map->result()});
    f->result_types = {map->result()->type};
    codegen::PhysicalLayout layout = codegen::ChoosePhysicalLayout(module);
    CHECK(layout.innermost == nullptr);
    CHECK(layout.outermost == (test.moved ? c : nullptr));
  }
}

TEST_CASE(
    "loops of a medium constant trip count stay rolled in large modules "
    "only (Note [Compile-time budgets])") {
  for (int adds : {100, 40000}) {
    llvm::LLVMContext context;
    llvm::Module module("budget", context);
    codegen::ModuleContext emitted;
    emitted.module = &module;
    // f(x): a loop whose body adds 1 `adds` times, its latch with a loop
    // ID of its own (as EmitFor makes for a medium loop).
    llvm::IRBuilder<> builder(context);
    auto* i64 = builder.getInt64Ty();
    auto* f =
        llvm::Function::Create(llvm::FunctionType::get(i64, {i64}, false),
                               llvm::GlobalValue::ExternalLinkage, "f", module);
    auto* entry = llvm::BasicBlock::Create(context, "entry", f);
    auto* loop = llvm::BasicBlock::Create(context, "loop", f);
    builder.SetInsertPoint(entry);
    builder.CreateBr(loop);
    builder.SetInsertPoint(loop);
    llvm::PHINode* value = builder.CreatePHI(i64, 2);
    value->addIncoming(f->getArg(0), entry);
    llvm::Value* next = value;
    for (int i = 0; i < adds; ++i)
      next = builder.CreateAdd(next, builder.getInt64(1));
    value->addIncoming(next, loop);
    llvm::BranchInst* latch = builder.CreateBr(loop);
    llvm::MDNode* id = llvm::MDNode::getDistinct(context, {nullptr});
    id->replaceOperandWith(0, id);
    latch->setMetadata(llvm::LLVMContext::MD_loop, id);
    emitted.medium_loops.push_back(latch);

    bool large = adds >= 40000;
    CHECK(codegen::LimitUnrolling(emitted) == large);
    llvm::MDNode* after = latch->getMetadata(llvm::LLVMContext::MD_loop);
    REQUIRE(after != nullptr);
    CHECK(after->getOperand(0) == after);
    bool disabled = false;
    for (unsigned k = 1; k < after->getNumOperands(); ++k)
      if (auto* property = llvm::dyn_cast<llvm::MDNode>(after->getOperand(k)))
        if (auto* name =
                llvm::dyn_cast<llvm::MDString>(property->getOperand(0)))
          disabled |= name->getString() == "llvm.loop.unroll.disable";
    CHECK(disabled == large);
  }
}
