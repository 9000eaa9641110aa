// Tests of object emission's budgets for large functions and modules (Notes
// [Large functions in code generation], [Loop strength reduction in large
// modules] and [Parallel code generation] in object.cpp).
#include "compiler/codegen/llvm/object.h"

#include <doctest/doctest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/codegen/llvm/target.h"

namespace {

// A module with one function of `adds` additions in a chain.
std::unique_ptr<llvm::Module> ChainOfAdds(llvm::LLVMContext& context,
                                          int adds) {
  std::string error;
  auto machine = delta::codegen::CreateHostTargetMachine(2, error);
  REQUIRE(machine != nullptr);
  auto module = std::make_unique<llvm::Module>("chain", context);
  module->setDataLayout(machine->createDataLayout());
  module->setTargetTriple(machine->getTargetTriple().str());
  llvm::IRBuilder<> builder(context);
  auto* function = llvm::Function::Create(
      llvm::FunctionType::get(builder.getInt64Ty(), {builder.getInt64Ty()},
                              false),
      llvm::GlobalValue::ExternalLinkage, "chain", *module);
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "", function));
  llvm::Value* value = function->getArg(0);
  for (int i = 0; i < adds; ++i)
    value = builder.CreateAdd(value, builder.getInt64(i + 1));
  builder.CreateRet(value);
  return module;
}

// The "machine code" row of --time-passes for the module.
std::string MachineCodeRow(int adds) {
  llvm::LLVMContext context;
  auto module = ChainOfAdds(context, adds);
  llvm::SmallString<0> code;
  llvm::raw_svector_ostream out(code);
  std::string error;
  delta::codegen::CodegenTimings timings;
  REQUIRE(delta::codegen::EmitMachineCode(
      *module, 2, llvm::CodeGenFileType::ObjectFile, out, error, &timings));
  CHECK(!code.empty());
  std::string printed;
  llvm::raw_string_ostream printed_stream(printed);
  timings.Flush(printed_stream);
  return printed;
}

// internal f(x) = x + 1 + 2 + ... + n, g(x) = f(x) + 1 + ... + n, and a C
// main that exits 0 if g(argc) is what it should be.
constexpr int kAdds = 10001;

std::unique_ptr<llvm::Module> TwoChains(llvm::LLVMContext& context) {
  std::unique_ptr<llvm::Module> module = ChainOfAdds(context, 0);
  module->getFunction("chain")->eraseFromParent();
  llvm::IRBuilder<> builder(context);
  auto* i64 = builder.getInt64Ty();
  auto chain = [&](const char* name, llvm::GlobalValue::LinkageTypes linkage,
                   llvm::Function* callee) {
    auto* function = llvm::Function::Create(
        llvm::FunctionType::get(i64, {i64}, false), linkage, name, *module);
    builder.SetInsertPoint(llvm::BasicBlock::Create(context, "", function));
    llvm::Value* value = function->getArg(0);
    if (callee != nullptr) value = builder.CreateCall(callee, {value});
    for (int i = 1; i <= kAdds; ++i)
      value = builder.CreateAdd(value, builder.getInt64(i));
    builder.CreateRet(value);
    return function;
  };
  llvm::Function* f = chain("f", llvm::GlobalValue::InternalLinkage, nullptr);
  llvm::Function* g = chain("g", llvm::GlobalValue::ExternalLinkage, f);
  auto* main = llvm::Function::Create(
      llvm::FunctionType::get(builder.getInt32Ty(),
                              {builder.getInt32Ty(), builder.getPtrTy()},
                              false),
      llvm::GlobalValue::ExternalLinkage, "main", *module);
  builder.SetInsertPoint(llvm::BasicBlock::Create(context, "", main));
  llvm::Value* x = builder.CreateSExt(main->getArg(0), i64);
  llvm::Value* expected = builder.CreateAdd(
      x, builder.getInt64(int64_t{kAdds} * (kAdds + 1)));  // 2 * n(n+1)/2
  llvm::Value* same =
      builder.CreateICmpEQ(builder.CreateCall(g, {x}), expected);
  builder.CreateRet(
      builder.CreateSelect(same, builder.getInt32(0), builder.getInt32(1)));
  return module;
}

}  // namespace

TEST_CASE(
    "functions above the budget are compiled without domain "
    "reassignment, others as before") {
  CHECK(MachineCodeRow(100).find("no domain reassignment") ==
        std::string::npos);
  std::string large = MachineCodeRow(15001);
  CHECK(large.find("largest function 15002 instructions: no domain "
                   "reassignment") != std::string::npos);
}

TEST_CASE(
    "modules from the budget on are compiled without loop strength "
    "reduction, others as before") {
  CHECK(MachineCodeRow(100).find("strength reduction") == std::string::npos);
  CHECK(MachineCodeRow(19990).find("strength reduction") == std::string::npos);
  CHECK(MachineCodeRow(20000).find(
            "instructions: no loop strength reduction") != std::string::npos);
}

TEST_CASE(
    "a large module is compiled in two parts that link into one "
    "program, the same parts every time") {
  // f and g land in different parts, so g's call of the local f crosses
  // them.
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module = TwoChains(context);
  delta::codegen::MainObject object;
  delta::codegen::CodegenTimings timings;
  std::string error;
  REQUIRE_MESSAGE(
      delta::codegen::EmitObjects(*module, 2, object.objects, error, &timings),
      error);
  CHECK(object.objects.size() == 2);
  int exit_status = -1;
  REQUIRE_MESSAGE(
      delta::codegen::RunObject(object, {"parts", "x"}, exit_status, error),
      error);
  CHECK(exit_status == 0);

  std::vector<std::string> again;
  REQUIRE(delta::codegen::EmitObjects(*TwoChains(context), 2, again, error));
  CHECK(again == object.objects);
}
