// What the GradBench tool's protocol code (tool.cpp) and its per-eval
// adapters (evals/*.cpp) share: reading JSON inputs, a module's loaded
// library and C ABI context, and timing calls. See docs/gradbench.md.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace gradbench {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A bad message or input, or a call that the library refused or that
// failed: answered with success: false and this text.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------
// Reading inputs.

const json& Field(const json& object, const char* key);
double Number(const json& value, const char* what);
int64_t Integer(const json& value, const char* what);

// A nested list of numbers, flattened row-major, with its shape.
struct Array {
  std::vector<double> data;
  std::vector<int64_t> shape;
  int64_t Dim(size_t i) const { return shape.at(i); }
};

// input[key] as an Array of `rank` levels of rectangular lists.
Array Read(const json& input, const char* key, size_t rank);

// Integers read from a list (indices): every element must be integral.
std::vector<int64_t> Integers(const Array& array, const char* what);

json List(const double* data, int64_t n);

// A row-major [n][rest] buffer as [rest][n].
template <typename T>
std::vector<T> MoveFirstLast(const std::vector<T>& data, int64_t n) {
  const int64_t rest = n == 0 ? 0 : static_cast<int64_t>(data.size()) / n;
  std::vector<T> out(data.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < rest; ++j) out[j * n + i] = data[i * rest + j];
  return out;
}

// ---------------------------------------------------------------------------
// A module: the shared library that `dlc build --lib` made of it on
// `define`, and the C ABI of its generated header (docs/embedding.md).

class Library {
 public:
  explicit Library(void* handle) : handle_(handle) {}
  Library(Library&& other) noexcept
      : handle_(other.handle_),
        context_(other.context_),
        destroy_context_(std::move(other.destroy_context_)) {
    other.handle_ = nullptr;
    other.context_ = nullptr;
    other.destroy_context_ = nullptr;
  }
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  Library& operator=(Library&&) = delete;
  ~Library() {
    if (destroy_context_) destroy_context_();
    if (handle_ != nullptr) dlclose(handle_);
  }

  // The library's C function `name`, as type F (GRADBENCH_ENTRY).
  template <typename F>
  F Entry(const char* name) const {
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr)
      throw InputError(std::string("the library lacks ") + name);
    return reinterpret_cast<F>(symbol);
  }

 private:
  template <typename, typename, typename, typename>
  friend class Context;
  void* handle_;
  // The module's context (a Context), made by the first `evaluate`.
  mutable void* context_ = nullptr;
  mutable std::function<void()> destroy_context_;
};

// The entry NAME of `library`, typed as the generated header declares
// NAME: the adapters include the headers that the build made of the
// modules, so their calls are type-checked against the C ABI.
#define GRADBENCH_ENTRY(library, name) (library).Entry<decltype(&name)>(#name)

// The context of one module's C ABI, made by its first `evaluate` and kept
// by its Library for the next ones, as a program that calls a library
// keeps one (a context's first call grows the buffers its later calls
// reuse: docs/embedding.md, "The context"). The entry points' types are
// those of the module's header (GRADBENCH_CONTEXT).
template <typename Create, typename Destroy, typename LastError,
          typename StatusString>
class Context {
 public:
  Context(const Library& library, Create create, Destroy destroy,
          LastError last_error, StatusString status_string)
      : last_error_(last_error), status_string_(status_string) {
    if (library.context_ == nullptr) {
      auto* made = create(nullptr);
      if (made == nullptr) throw InputError("could not create a context");
      library.context_ = made;
      library.destroy_context_ = [destroy, made] { destroy(made); };
    }
    context_ = static_cast<Pointer>(library.context_);
  }
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  auto get() const { return context_; }

  // Throws the library's status and message unless `status` is the OK
  // status (0 in every generated header).
  template <typename Status>
  void Check(Status status) const {
    if (status == Status{}) return;
    throw InputError(std::string(status_string_(status)) + ": " +
                     last_error_(context_));
  }

 private:
  using Pointer = std::invoke_result_t<Create, std::nullptr_t>;
  Pointer context_ = nullptr;
  LastError last_error_;
  StatusString status_string_;
};

// The context of the module whose C prefix is `prefix` (hello, llsq, ...).
#define GRADBENCH_CONTEXT(library, prefix)                                 \
  ::gradbench::Context((library),                                          \
                       GRADBENCH_ENTRY(library, prefix##_context_create),  \
                       GRADBENCH_ENTRY(library, prefix##_context_destroy), \
                       GRADBENCH_ENTRY(library, prefix##_last_error),      \
                       GRADBENCH_ENTRY(library, prefix##_status_string))

// ---------------------------------------------------------------------------
// Running a function as often as min_runs/min_seconds ask.

// The smallest number of runs and of seconds: input.min_runs and
// input.min_seconds; `hello` has neither and runs once.
struct Repeat {
  int64_t min_runs = 1;
  double min_seconds = 0;
};
Repeat RepeatOf(const json& input);

// Calls `call` (a call of the module that returns its status) while
// runs < min_runs or time < min_seconds, with one "evaluate" timing per
// call: the call alone, not the conversions around it. A status other
// than OK ends the evaluate with the library's message.
template <typename Context, typename Call>
void Measure(const json& input, const Context& context, json& timings,
             Call call) {
  const Repeat repeat = RepeatOf(input);
  int64_t runs = 0;
  double total = 0;
  while (runs < repeat.min_runs || total < repeat.min_seconds) {
    const auto start = Clock::now();
    const auto status = call();
    const auto stop = Clock::now();
    context.Check(status);
    const auto nanoseconds =
        std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start)
            .count();
    timings.push_back({{"name", "evaluate"}, {"nanoseconds", nanoseconds}});
    total += static_cast<double>(nanoseconds) * 1e-9;
    ++runs;
  }
}

// ---------------------------------------------------------------------------
// The evals (evals/EVAL.cpp): each converts the input into the arguments
// of the module's C entry `function`, measures it and returns the output
// in the eval's JSON shape, adding its timings to `timings`.

using Adapter = json (*)(const Library& library, const std::string& function,
                         const json& input, json& timings);

json Hello(const Library&, const std::string&, const json&, json&);
json Llsq(const Library&, const std::string&, const json&, json&);
json Lse(const Library&, const std::string&, const json&, json&);
json Ode(const Library&, const std::string&, const json&, json&);
json Kmeans(const Library&, const std::string&, const json&, json&);
json Gmm(const Library&, const std::string&, const json&, json&);
json Ba(const Library&, const std::string&, const json&, json&);
json Lstm(const Library&, const std::string&, const json&, json&);
json Det(const Library&, const std::string&, const json&, json&);
json Ht(const Library&, const std::string&, const json&, json&);
json Particle(const Library&, const std::string&, const json&, json&);
json Saddle(const Library&, const std::string&, const json&, json&);

}  // namespace gradbench
