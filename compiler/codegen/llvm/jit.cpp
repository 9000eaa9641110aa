// ORC LLJIT for `dlc run`: the program is compiled to an object file (which
// the compilation cache can keep), then linked in memory; the runtime's
// functions are registered as absolute symbols (their addresses in dlc),
// libc, libm and libmvec come from the process.
#include "compiler/codegen/llvm/jit.h"

#include <llvm/ExecutionEngine/Orc/Core.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/DynamicLibrary.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include "compiler/codegen/llvm/object.h"
#include "compiler/codegen/llvm/target.h"
#include "runtime/args.h"
#include "runtime/cuda.h"
#include "runtime/distributed.h"
#include "runtime/kernels.h"
#include "runtime/npy.h"
#include "runtime/runtime.h"

namespace delta::codegen {
namespace {

// Every function of runtime.h that generated code may call. Registering
// them explicitly works whatever the linker kept of the static runtime and
// needs no -rdynamic.
llvm::orc::SymbolMap RuntimeSymbols(llvm::orc::LLJIT& jit) {
  struct Entry {
    const char* name;
    void* address;
  };
  const Entry entries[] = {
      {"delta_alloc", reinterpret_cast<void*>(&delta_alloc)},
      {"delta_free", reinterpret_cast<void*>(&delta_free)},
      {"delta_fail", reinterpret_cast<void*>(&delta_fail)},
      {"delta_fail_format", reinterpret_cast<void*>(&delta_fail_format)},
      {"delta_set_location", reinterpret_cast<void*>(&delta_set_location)},
      {"delta_enter_call", reinterpret_cast<void*>(&delta_enter_call)},
      {"delta_leave_call", reinterpret_cast<void*>(&delta_leave_call)},
      {"delta_print_begin", reinterpret_cast<void*>(&delta_print_begin)},
      {"delta_print_text", reinterpret_cast<void*>(&delta_print_text)},
      {"delta_print_value", reinterpret_cast<void*>(&delta_print_value)},
      {"delta_print_end", reinterpret_cast<void*>(&delta_print_end)},
      {"delta_read_npy", reinterpret_cast<void*>(&delta_read_npy)},
      {"delta_write_npy", reinterpret_cast<void*>(&delta_write_npy)},
      {"delta_flush", reinterpret_cast<void*>(&delta_flush)},
      {"delta_parse_args", reinterpret_cast<void*>(&delta_parse_args)},
      {"delta_path_arg", reinterpret_cast<void*>(&delta_path_arg)},
      {"delta_npy_extents", reinterpret_cast<void*>(&delta_npy_extents)},
      {"delta_parallel_for", reinterpret_cast<void*>(&delta_parallel_for)},
      {"delta_shard_init", reinterpret_cast<void*>(&delta_shard_init)},
      {"delta_shard_finalize", reinterpret_cast<void*>(&delta_shard_finalize)},
      {"delta_shard_extent", reinterpret_cast<void*>(&delta_shard_extent)},
      {"delta_shard_offset", reinterpret_cast<void*>(&delta_shard_offset)},
      {"delta_shard_allreduce",
       reinterpret_cast<void*>(&delta_shard_allreduce)},
      {"delta_shard_exscan_sum",
       reinterpret_cast<void*>(&delta_shard_exscan_sum)},
      {"delta_shard_print_value",
       reinterpret_cast<void*>(&delta_shard_print_value)},
      {"delta_shard_read_npy", reinterpret_cast<void*>(&delta_shard_read_npy)},
      {"delta_shard_write_npy",
       reinterpret_cast<void*>(&delta_shard_write_npy)},
      {"delta_num_threads", reinterpret_cast<void*>(&delta_num_threads)},
      {"delta_gemm_f32", reinterpret_cast<void*>(&delta_gemm_f32)},
      {"delta_gemm_f64", reinterpret_cast<void*>(&delta_gemm_f64)},
      // Code built with --target=cuda (runtime/cuda.h).
      {"delta_cuda_init", reinterpret_cast<void*>(&delta_cuda_init)},
      {"delta_cuda_function", reinterpret_cast<void*>(&delta_cuda_function)},
      {"delta_cuda_launch", reinterpret_cast<void*>(&delta_cuda_launch)},
      {"delta_cuda_resident_blocks",
       reinterpret_cast<void*>(&delta_cuda_resident_blocks)},
      {"delta_cuda_error_slot",
       reinterpret_cast<void*>(&delta_cuda_error_slot)},
      {"delta_cuda_check", reinterpret_cast<void*>(&delta_cuda_check)},
      {"delta_cuda_alloc", reinterpret_cast<void*>(&delta_cuda_alloc)},
      {"delta_cuda_device", reinterpret_cast<void*>(&delta_cuda_device)},
      {"delta_cuda_host", reinterpret_cast<void*>(&delta_cuda_host)},
      {"delta_cuda_clone", reinterpret_cast<void*>(&delta_cuda_clone)},
      {"delta_cuda_free", reinterpret_cast<void*>(&delta_cuda_free)},
      {"delta_cuda_gemm", reinterpret_cast<void*>(&delta_cuda_gemm)},
      {"delta_cuda_alloc_result",
       reinterpret_cast<void*>(&delta_cuda_alloc_result)},
  };
  llvm::orc::SymbolMap symbols;
  for (const Entry& entry : entries)
    symbols[jit.mangleAndIntern(entry.name)] = {
        llvm::orc::ExecutorAddr::fromPtr(entry.address),
        llvm::JITSymbolFlags::Exported | llvm::JITSymbolFlags::Callable};
  return symbols;
}

}  // namespace

bool CompileMain(const ir::Module& module, const CodegenOptions& run_options,
                 MainObject& object, std::string& error) {
  CodegenOptions options = run_options;
  options.emit_c_main = true;
  if (module.FindFunction("main") == nullptr) {
    error = "the program has no `main` function";
    return false;
  }
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> llvm_module =
      EmitLLVM(module, context, options);
  object.vector_math = UsesVectorMath(*llvm_module);
  return EmitObjects(*llvm_module, options.opt_level, object.objects, error,
                     options.timings);
}

bool RunObject(const MainObject& object, const std::vector<std::string>& args,
               int& exit_status, std::string& error, CodegenTimings* timings) {
  auto start = Clock::now();
  // -O3 loops may call libmvec (Note [Vector math] in target.cpp), which dlc
  // itself does not link; loaded globally, the process search finds it.
  std::string load_error;
  if (object.vector_math && llvm::sys::DynamicLibrary::LoadLibraryPermanently(
                                "libmvec.so.1", &load_error)) {
    error = "cannot load glibc's vector math library: " + load_error;
    return false;
  }
  // The object was made for the host (CreateHostTargetMachine), as the JIT
  // links for it.
  InitializeHostTarget();
  auto machine_builder = llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!machine_builder) {
    error = llvm::toString(machine_builder.takeError());
    return false;
  }
  auto jit = llvm::orc::LLJITBuilder()
                 .setJITTargetMachineBuilder(std::move(*machine_builder))
                 .create();
  if (!jit) {
    error = llvm::toString(jit.takeError());
    return false;
  }
  llvm::orc::JITDylib& library = (*jit)->getMainJITDylib();
  if (llvm::Error defined =
          library.define(llvm::orc::absoluteSymbols(RuntimeSymbols(**jit)))) {
    error = llvm::toString(std::move(defined));
    return false;
  }
  auto process = llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!process) {
    error = llvm::toString(process.takeError());
    return false;
  }
  library.addGenerator(std::move(*process));
  if (timings != nullptr) timings->steps.Add("JIT set-up", SecondsSince(start));

  start = Clock::now();
  for (const std::string& code : object.objects) {
    if (llvm::Error added = (*jit)->addObjectFile(
            llvm::MemoryBuffer::getMemBufferCopy(code, "main.o"))) {
      error = llvm::toString(std::move(added));
      return false;
    }
  }
  // Looking `main` up links the object in memory.
  auto main = (*jit)->lookup("main");
  if (!main) {
    error = llvm::toString(main.takeError());
    return false;
  }
  if (timings != nullptr) {
    timings->steps.Add("JIT linking", SecondsSince(start));
    // Before main, whose output would otherwise come first.
    timings->Flush(llvm::errs());
    llvm::errs().flush();
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  argv.push_back(nullptr);
  exit_status = main->toPtr<int (*)(int, const char* const*)>()(
      static_cast<int>(args.size()), argv.data());
  delta_flush();
  return true;
}

bool RunMain(const ir::Module& module, const CodegenOptions& options,
             const std::vector<std::string>& args, int& exit_status,
             std::string& error) {
  MainObject object;
  return CompileMain(module, options, object, error) &&
         RunObject(object, args, exit_status, error, options.timings);
}

bool RunMain(const ir::Module& module, const CodegenOptions& options,
             std::string& error) {
  int exit_status = 0;
  return RunMain(module, options, {"main"}, exit_status, error) &&
         exit_status == 0;
}

}  // namespace delta::codegen
