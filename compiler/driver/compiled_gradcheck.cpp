// Runs the derivative evaluations of `dlc test`'s gradient checks again as
// compiled code, in a child process.
#include "compiler/driver/compiled_gradcheck.h"

#include <fcntl.h>
#include <llvm/ADT/ScopeExit.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "compiler/codegen/llvm/jit.h"
#include "compiler/ir/builder.h"
#include "compiler/transforms/pass_manager.h"
#include "compiler/transforms/rewrite.h"

namespace delta::driver {
namespace {

// Note [Compiled gradient checks]: the checks run first with the
// interpreter, which records every evaluation (GradcheckCalls). A `main`
// added to the module then reads each derivative call's inputs from .npy
// files, calls the derivative function and writes its results; it is
// optimized and JIT-compiled as `dlc run` compiles a program, in a child
// process (fork), so that a run-time error or a crash of the compiled code
// fails the check instead of ending `dlc test`. The checks then run again
// on the compiled results, with the finite differences they recorded, so
// a compiled derivative is held to the same tolerance as the
// interpreter's.

// A compiled derivative that hangs must not hang the suite.
constexpr unsigned kTimeoutSeconds = 300;

// Set (to anything) in a test of this check: every float multiplication
// in the derivative functions becomes an addition in the compiled code
// only, a stand-in for a miscompiled derivative (lang-tests/driver).
constexpr const char* kMiscompileVariable = "DELTA_TEST_MISCOMPILE_DERIVATIVES";

llvm::Error Failure(const std::string& message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

std::string NpyPath(llvm::StringRef dir, size_t call, const char* what,
                    size_t k) {
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, std::to_string(call) + "." + what + "." +
                                    std::to_string(k) + ".npy");
  return path.str().str();
}

// A tensor's dims in canonical order, as the .npy files hold them.
std::vector<int64_t> CanonicalAxes(const interpreter::Tensor& tensor) {
  std::vector<int64_t> axes(tensor.dims.size());
  std::iota(axes.begin(), axes.end(), 0);
  return axes;
}

std::vector<const GradcheckCall*> DerivativeCalls(
    const std::vector<GradcheckCalls>& checks) {
  std::vector<const GradcheckCall*> calls;
  for (const GradcheckCalls& check : checks)
    for (const GradcheckCall& call : check.calls)
      if (call.derivative) calls.push_back(&call);
  return calls;
}

// The child's `main`: read the inputs, call, write the results. The
// program's own `main` goes (nothing calls it), and nothing is exported, so
// that inlining leaves only what the checks call to compile.
void AddMain(ir::Module& module, const std::vector<const GradcheckCall*>& calls,
             llvm::StringRef dir) {
  std::erase_if(module.functions,
                [](const auto& function) { return function->name == "main"; });
  for (auto& function : module.functions) function->is_export = false;
  ir::Function* main = module.AddFunction("main");
  ir::Builder builder(main);
  auto npy_op = [&](ir::OpKind kind, std::vector<ir::Value*> operands,
                    const ir::Type& type, std::string path) {
    ir::Op* op =
        builder.Create(kind, std::move(operands),
                       kind == ir::OpKind::ReadNpy ? std::vector<ir::Type>{type}
                                                   : std::vector<ir::Type>{});
    op->dims.assign(type.dims.begin(), type.dims.end());
    op->print_items = {{false, std::move(path)}};
    return op;
  };
  for (size_t k = 0; k < calls.size(); ++k) {
    ir::Function* callee = module.FindFunction(calls[k]->function->name);
    std::vector<ir::Value*> args;
    for (size_t i = 0; i < calls[k]->args.size(); ++i)
      args.push_back(npy_op(ir::OpKind::ReadNpy, {},
                            calls[k]->args[i].GetType(),
                            NpyPath(dir, k, "in", i))
                         ->results[0]);
    ir::Op* call =
        builder.Create(ir::OpKind::Call, std::move(args), callee->result_types);
    call->callee = callee;
    for (size_t r = 0; r < call->results.size(); ++r)
      npy_op(ir::OpKind::WriteNpy, {call->results[r]}, call->results[r]->type,
             NpyPath(dir, k, "out", r));
  }
  builder.Return({});
}

void Miscompile(ir::Module& module) {
  for (auto& function : module.functions) {
    if (!function->derivative) continue;
    transforms::WalkOps(*function->body, [](ir::Op& op) {
      if (op.kind == ir::OpKind::Mul && ir::IsFloat(op.results[0]->type.elem))
        op.kind = ir::OpKind::Add;
    });
  }
}

// In the child: compile and run `main`; never returns.
[[noreturn]] void RunChild(ir::Module& module,
                           const std::vector<const GradcheckCall*>& calls,
                           llvm::StringRef dir, const std::string& log,
                           int opt_level) {
  int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  int null_fd = open("/dev/null", O_WRONLY);
  if (log_fd < 0 || null_fd < 0) _exit(3);
  dup2(null_fd, STDOUT_FILENO);
  dup2(log_fd, STDERR_FILENO);
  alarm(kTimeoutSeconds);
  AddMain(module, calls, dir);
  if (std::getenv(kMiscompileVariable) != nullptr) Miscompile(module);
  transforms::PipelineOptions pipeline;
  pipeline.opt_level = opt_level;
  codegen::CodegenOptions codegen_options;
  codegen_options.opt_level = opt_level;
  std::string error;
  if (!transforms::RunPipeline(module, pipeline) ||
      !codegen::RunMain(module, codegen_options, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    _exit(3);
  }
  _exit(0);
}

}  // namespace

llvm::Error RecomputeDerivativesCompiled(ir::Module& module,
                                         std::vector<GradcheckCalls>& checks,
                                         int opt_level) {
  std::vector<const GradcheckCall*> calls = DerivativeCalls(checks);
  if (calls.empty()) return llvm::Error::success();
  llvm::SmallString<128> dir;
  if (llvm::sys::fs::createUniqueDirectory("dlc-gradcheck", dir))
    return Failure("cannot create a temporary folder");
  std::string log = (dir + "/errors.txt").str();
  auto cleanup =
      llvm::make_scope_exit([&] { llvm::sys::fs::remove_directories(dir); });
  std::string error;
  for (size_t k = 0; k < calls.size(); ++k)
    for (size_t i = 0; i < calls[k]->args.size(); ++i) {
      const interpreter::Tensor& arg = calls[k]->args[i];
      if (!interpreter::WriteNpy(NpyPath(dir, k, "in", i), CanonicalAxes(arg),
                                 arg, error))
        return Failure("cannot write the inputs: " + error);
    }
  std::fflush(nullptr);  // the child must not write the parent's buffers
  pid_t child = fork();
  if (child < 0) return Failure("cannot start a process");
  if (child == 0) RunChild(module, calls, dir, log, opt_level);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    auto text = llvm::MemoryBuffer::getFile(log, /*IsText=*/true);
    std::string message =
        text ? llvm::StringRef((*text)->getBuffer()).trim().str() : "";
    if (WIFSIGNALED(status))
      message = "crashed or timed out (signal " +
                std::to_string(WTERMSIG(status)) + ")";
    return Failure(message.empty() ? "the compiled derivatives failed"
                                   : message);
  }
  size_t k = 0;
  for (GradcheckCalls& check : checks)
    for (GradcheckCall& call : check.calls) {
      if (!call.derivative) continue;
      for (size_t r = 0; r < call.results.size(); ++r) {
        interpreter::Tensor& result = call.results[r];
        if (!interpreter::ReadNpy(NpyPath(dir, k, "out", r),
                                  CanonicalAxes(result), result, error))
          return Failure("cannot read the results: " + error);
      }
      ++k;
    }
  return llvm::Error::success();
}

}  // namespace delta::driver
