// Tests of object emission's budget for large functions (Note [Large
// functions in code generation] in object.cpp).
#include "compiler/codegen/llvm/object.h"

#include <doctest/doctest.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <string>

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
