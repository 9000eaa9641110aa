// The GradBench tool for Delta: speaks the protocol of
// ../shared/gradbench/SPEC.md on stdin/stdout, compiles each eval's Delta
// module (bench/gradbench/modules/EVAL.dl) into a shared library on
// `define`, and calls its exported functions on `evaluate`. See
// docs/gradbench.md.
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// A bad message or input: answered with success: false and this text.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string Env(const char* name, const char* fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : fallback;
}

// ---------------------------------------------------------------------------
// Compiling and loading a module.

// Runs a command (argv, no shell); its output goes to stderr, so that
// stdout carries protocol lines only. Returns the exit status.
int RunCommand(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    dup2(STDERR_FILENO, STDOUT_FILENO);
    std::vector<char*> args;
    for (const std::string& arg : argv)
      args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) < 0) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

using FailHandler = void (*)(void*, const char*, int, int, const char*);

// A loaded module: the shared library and the runtime functions in it.
struct Module {
  void* handle = nullptr;
  void (*free_buffer)(void*) = nullptr;
  void (*set_fail_handler)(FailHandler, void*) = nullptr;

  void* Symbol(const std::string& function) const {
    // Exported Delta functions are `delta.NAME` (docs/internals/codegen.md).
    void* symbol = dlsym(handle, ("delta." + function).c_str());
    if (symbol == nullptr)
      throw InputError("the module has no function " + function);
    return symbol;
  }
};

// Run-time errors of generated code (an index out of range, a size
// mismatch) call the runtime's fail handler, which must not return: it
// records the message and jumps back to the call (Guarded).
thread_local std::jmp_buf* fail_target = nullptr;
thread_local std::string fail_message;

void OnFail(void*, const char* file, int line, int column,
            const char* message) {
  fail_message = file != nullptr
                     ? std::string(file) + ":" + std::to_string(line) + ":" +
                           std::to_string(column) + ": " + message
                     : message;
  if (fail_target != nullptr) std::longjmp(*fail_target, 1);
  std::fprintf(stderr, "delta run-time error outside a call: %s\n",
               fail_message.c_str());
  std::abort();
}

// Compiles bench/gradbench/modules/NAME.dl into CACHE/NAME.so and loads it.
Module Load(const std::string& name) {
  const std::string source =
      Env("GRADBENCH_MODULES", GRADBENCH_MODULES_DIR) + "/" + name + ".dl";
  const std::string cache = Env("GRADBENCH_CACHE", GRADBENCH_CACHE_DIR);
  if (access(source.c_str(), R_OK) != 0)
    throw InputError("no Delta module for " + name);
  mkdir(cache.c_str(), 0755);
  const std::string object = cache + "/" + name + ".o";
  const std::string library = cache + "/" + name + ".so";
  // `dlc build --lib` is not there yet: build an object and link it with
  // the runtime into a shared library ourselves.
  if (RunCommand({Env("GRADBENCH_DLC", GRADBENCH_DLC_PATH), "build", "-O3",
                  "--emit=obj", source, "-o", object}) != 0)
    throw InputError("dlc could not compile " + source +
                     " (its messages are on stderr)");
  if (RunCommand({Env("GRADBENCH_CXX", GRADBENCH_CXX_PATH), "-shared", "-o",
                  library, object, "-Wl,--whole-archive",
                  Env("GRADBENCH_RUNTIME", GRADBENCH_RUNTIME_PATH),
                  "-Wl,--no-whole-archive", "-lm", "-lpthread"}) != 0)
    throw InputError("could not link " + library);
  Module module;
  module.handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module.handle == nullptr)
    throw InputError(std::string("dlopen: ") + dlerror());
  module.free_buffer =
      reinterpret_cast<void (*)(void*)>(dlsym(module.handle, "delta_free"));
  module.set_fail_handler = reinterpret_cast<void (*)(FailHandler, void*)>(
      dlsym(module.handle, "delta_set_fail_handler"));
  if (module.free_buffer == nullptr || module.set_fail_handler == nullptr)
    throw InputError("the library lacks the Delta runtime");
  module.set_fail_handler(OnFail, nullptr);
  return module;
}

// ---------------------------------------------------------------------------
// Reading inputs.

const json& Field(const json& object, const char* key) {
  if (!object.is_object()) throw InputError("the input is not an object");
  auto it = object.find(key);
  if (it == object.end())
    throw InputError(std::string("the input lacks \"") + key + "\"");
  return *it;
}

double Number(const json& value, const char* what) {
  if (!value.is_number())
    throw InputError(std::string(what) + " is not a number");
  return value.get<double>();
}

int64_t Integer(const json& value, const char* what) {
  if (!value.is_number_integer()) {
    if (value.is_number_float() &&
        value.get<double>() == static_cast<int64_t>(value.get<double>()))
      return static_cast<int64_t>(value.get<double>());
    throw InputError(std::string(what) + " is not an integer");
  }
  return value.get<int64_t>();
}

// A nested list of numbers, flattened row-major, with its shape; `rank`
// levels of lists are expected and must be rectangular.
struct Array {
  std::vector<double> data;
  std::vector<int64_t> shape;
  int64_t Dim(size_t i) const { return shape.at(i); }
};

void Flatten(const json& value, size_t level, size_t rank, Array& out,
             const char* what) {
  if (level == rank) {
    out.data.push_back(Number(value, what));
    return;
  }
  if (!value.is_array())
    throw InputError(std::string(what) + " is not a list of the right depth");
  const auto length = static_cast<int64_t>(value.size());
  if (out.shape.size() <= level) {
    out.shape.push_back(length);
  } else if (out.shape[level] != length) {
    throw InputError(std::string(what) + " is not rectangular");
  }
  for (const json& element : value)
    Flatten(element, level + 1, rank, out, what);
  // An empty list still fixes the inner sizes at 0.
  if (length == 0)
    while (out.shape.size() < rank) out.shape.push_back(0);
}

Array Read(const json& input, const char* key, size_t rank) {
  Array out;
  Flatten(Field(input, key), 0, rank, out, key);
  return out;
}

json List(const double* data, int64_t n) {
  return json(std::vector<double>(data, data + n));
}

// ---------------------------------------------------------------------------
// Running a function as often as min_runs/min_seconds ask.

// The buffers that the last run returned, freed before the next run and at
// the end (they are the module's: delta_alloc).
class Results {
 public:
  explicit Results(const Module& module) : module_(module) {}
  Results(const Results&) = delete;
  Results& operator=(const Results&) = delete;
  ~Results() { Clear(); }
  void Hold(void* buffer) { held_.push_back(buffer); }
  void Clear() {
    for (void* buffer : held_) module_.free_buffer(buffer);
    held_.clear();
  }

 private:
  const Module& module_;
  std::vector<void*> held_;
};

// Calls `run` with a jump target for run-time errors of generated code.
template <typename Run>
bool Guarded(Run& run) {
  std::jmp_buf target;
  fail_target = &target;
  if (setjmp(target) != 0) {
    fail_target = nullptr;
    return false;
  }
  run();
  fail_target = nullptr;
  return true;
}

// Runs `run` (which calls the module and hands its buffers to `results`)
// while runs < min_runs or time < min_seconds, one "evaluate" timing per
// run; `hello` has no such fields and runs once.
template <typename Run>
void Measure(const json& input, Results& results, json& timings, Run run) {
  int64_t min_runs = 1;
  double min_seconds = 0;
  if (input.is_object() && input.contains("min_runs")) {
    min_runs = Integer(input["min_runs"], "min_runs");
    min_seconds = Number(Field(input, "min_seconds"), "min_seconds");
  }
  int64_t runs = 0;
  double total = 0;
  while (runs < min_runs || total < min_seconds) {
    results.Clear();
    const auto start = Clock::now();
    const bool ok = Guarded(run);
    const auto stop = Clock::now();
    if (!ok) throw InputError("run-time error: " + fail_message);
    const auto nanoseconds =
        std::chrono::duration_cast<std::chrono::nanoseconds>(stop - start)
            .count();
    timings.push_back({{"name", "evaluate"}, {"nanoseconds", nanoseconds}});
    total += static_cast<double>(nanoseconds) * 1e-9;
    ++runs;
  }
}

// ---------------------------------------------------------------------------
// The evals: each converts the input, calls the function and shapes the
// output. `Call` gives one function's handler.

using Handler =
    std::function<json(const Module&, const std::string&, const json&, json&)>;

template <typename F>
F Entry(const Module& module, const std::string& function) {
  return reinterpret_cast<F>(module.Symbol(function));
}

struct Two {
  double* a;
  double* b;
};
struct Four {
  double* a;
  double* b;
  double* c;
  double* d;
};

json Hello(const Module& module, const std::string& function, const json& input,
           json& timings) {
  if (function != "square" && function != "double")
    throw InputError("hello has no " + function);
  auto f = Entry<double (*)(double)>(module, function);
  const double x = Number(input, "the input");
  double y = 0;
  Results results(module);
  Measure(input, results, timings, [&] { y = f(x); });
  return y;
}

json Llsq(const Module& module, const std::string& function, const json& input,
          json& timings) {
  const Array x = Read(input, "x", 1);
  const int64_t n = Integer(Field(input, "n"), "n");
  if (n < 2) throw InputError("n must be at least 2");
  Results results(module);
  if (function == "primal") {
    auto f =
        Entry<double (*)(int64_t, const double*, int64_t)>(module, function);
    double y = 0;
    Measure(input, results, timings,
            [&] { y = f(x.Dim(0), x.data.data(), n); });
    return y;
  }
  if (function != "gradient") throw InputError("llsq has no " + function);
  auto f =
      Entry<double* (*)(int64_t, const double*, int64_t)>(module, function);
  double* g = nullptr;
  Measure(input, results, timings,
          [&] { results.Hold(g = f(x.Dim(0), x.data.data(), n)); });
  return List(g, x.Dim(0));
}

json Lse(const Module& module, const std::string& function, const json& input,
         json& timings) {
  const Array x = Read(input, "x", 1);
  if (x.Dim(0) == 0) throw InputError("x is empty");
  Results results(module);
  if (function == "primal") {
    auto f = Entry<double (*)(int64_t, const double*)>(module, function);
    double y = 0;
    Measure(input, results, timings, [&] { y = f(x.Dim(0), x.data.data()); });
    return y;
  }
  if (function != "gradient") throw InputError("lse has no " + function);
  auto f = Entry<double* (*)(int64_t, const double*)>(module, function);
  double* g = nullptr;
  Measure(input, results, timings,
          [&] { results.Hold(g = f(x.Dim(0), x.data.data())); });
  return List(g, x.Dim(0));
}

json Ode(const Module& module, const std::string& function, const json& input,
         json& timings) {
  const Array x = Read(input, "x", 1);
  const int64_t s = Integer(Field(input, "s"), "s");
  if (x.Dim(0) == 0 || s < 1)
    throw InputError("x must not be empty and s must be positive");
  if (function != "primal" && function != "gradient")
    throw InputError("ode has no " + function);
  auto f =
      Entry<double* (*)(int64_t, const double*, int64_t)>(module, function);
  Results results(module);
  double* y = nullptr;
  Measure(input, results, timings,
          [&] { results.Hold(y = f(x.Dim(0), x.data.data(), s)); });
  return List(y, x.Dim(0));
}

json Kmeans(const Module& module, const std::string& function,
            const json& input, json& timings) {
  const Array points = Read(input, "points", 2);
  const Array centroids = Read(input, "centroids", 2);
  const int64_t n = points.Dim(0), k = centroids.Dim(0), d = points.Dim(1);
  if (centroids.Dim(1) != d)
    throw InputError("points and centroids differ in dimension");
  if (k == 0) throw InputError("no centroids");
  Results results(module);
  if (function == "cost") {
    auto f = Entry<double (*)(int64_t, int64_t, int64_t, const double*,
                              const double*)>(module, function);
    double y = 0;
    Measure(input, results, timings,
            [&] { y = f(n, k, d, points.data.data(), centroids.data.data()); });
    return y;
  }
  if (function != "dir") throw InputError("kmeans has no " + function);
  auto f = Entry<double* (*)(int64_t, int64_t, int64_t, const double*,
                             const double*)>(module, function);
  double* dir = nullptr;
  Measure(input, results, timings, [&] {
    results.Hold(dir = f(n, k, d, points.data.data(), centroids.data.data()));
  });
  json out = json::array();
  for (int64_t j = 0; j < k; ++j) out.push_back(List(dir + j * d, d));
  return out;
}

json Gmm(const Module& module, const std::string& function, const json& input,
         json& timings) {
  const int64_t d = Integer(Field(input, "d"), "d"),
                k = Integer(Field(input, "k"), "k");
  const int64_t n = Integer(Field(input, "n"), "n"),
                m = Integer(Field(input, "m"), "m");
  const double gamma = Number(Field(input, "gamma"), "gamma");
  const Array x = Read(input, "x", 2), alpha = Read(input, "alpha", 1),
              mu = Read(input, "mu", 2);
  const Array q = Read(input, "q", 2), l = Read(input, "l", 2);
  const int64_t t = d * (d - 1) / 2;
  if (d < 1 || k < 1 || m < 0 || x.shape != std::vector<int64_t>{n, d} ||
      alpha.Dim(0) != k || mu.shape != std::vector<int64_t>{k, d} ||
      q.shape != std::vector<int64_t>{k, d} ||
      l.shape != std::vector<int64_t>{k, t})
    throw InputError("gmm: the arrays' sizes do not agree with d, k and n");
  using Args = const double*;
  Results results(module);
  if (function == "objective") {
    auto f =
        Entry<double (*)(int64_t, int64_t, int64_t, int64_t, Args, Args, Args,
                         Args, Args, int64_t, double)>(module, function);
    double y = 0;
    Measure(input, results, timings, [&] {
      y = f(n, k, d, t, x.data.data(), alpha.data.data(), mu.data.data(),
            q.data.data(), l.data.data(), m, gamma);
    });
    return y;
  }
  if (function != "jacobian") throw InputError("gmm has no " + function);
  auto f = Entry<Four (*)(int64_t, int64_t, int64_t, int64_t, Args, Args, Args,
                          Args, Args, int64_t, double)>(module, function);
  Four g{};
  Measure(input, results, timings, [&] {
    g = f(n, k, d, t, x.data.data(), alpha.data.data(), mu.data.data(),
          q.data.data(), l.data.data(), m, gamma);
    for (double* buffer : {g.a, g.b, g.c, g.d}) results.Hold(buffer);
  });
  auto rows = [&](const double* data, int64_t width) {
    json out = json::array();
    for (int64_t j = 0; j < k; ++j)
      out.push_back(List(data + j * width, width));
    return out;
  };
  return {{"alpha", List(g.a, k)},
          {"mu", rows(g.b, d)},
          {"q", rows(g.c, d)},
          {"l", rows(g.d, t)}};
}

// The first 30 elements of an array of `length` elements, then its last.
template <typename At>
json Truncated(int64_t length, At at) {
  json out = json::array();
  for (int64_t i = 0; i < std::min<int64_t>(30, length); ++i)
    out.push_back(at(i));
  if (length > 0) out.push_back(at(length - 1));
  return out;
}

json Ba(const Module& module, const std::string& function, const json& input,
        json& timings) {
  const int64_t n = Integer(Field(input, "n"), "n"),
                m = Integer(Field(input, "m"), "m");
  const int64_t p = Integer(Field(input, "p"), "p");
  const Array cam = Read(input, "cam", 1), x = Read(input, "x", 1),
              feat = Read(input, "feat", 1);
  const double w = Number(Field(input, "w"), "w");
  if (n < 1 || m < 1 || p < 1 || cam.Dim(0) != 11 || x.Dim(0) != 3 ||
      feat.Dim(0) != 2)
    throw InputError(
        "ba: expected n, m, p >= 1, 11 camera parameters, 3 coordinates, 2 "
        "feature coordinates");
  // Materialize the whole problem (SPEC §3.7), in the layouts of the
  // exported signatures: cam f64[cp, cams], x f64[xyz, pts], feat f64[uv, obs].
  std::vector<double> cams(11 * n), points(3 * m), weights(p, w),
      features(2 * p);
  for (int64_t c = 0; c < 11; ++c)
    for (int64_t j = 0; j < n; ++j) cams[c * n + j] = cam.data[c];
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t j = 0; j < m; ++j) points[c * m + j] = x.data[c];
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < p; ++i) features[c * p + i] = feat.data[c];
  std::vector<int64_t> cam_of(p), point_of(p);
  for (int64_t i = 0; i < p; ++i) cam_of[i] = i % n, point_of[i] = i % m;
  using Args = const double*;
  using Indices = const int64_t*;
  Results results(module);
  if (function == "objective") {
    auto f = Entry<Two (*)(int64_t, int64_t, int64_t, Args, Args, Args, Args,
                           Indices, Indices)>(module, function);
    Two e{};
    Measure(input, results, timings, [&] {
      e = f(n, m, p, cams.data(), points.data(), weights.data(),
            features.data(), cam_of.data(), point_of.data());
      results.Hold(e.a);
      results.Hold(e.b);
    });
    return {{"reproj_error", {{"elements", {e.a[0], e.a[p]}}, {"repeated", p}}},
            {"w_err", {{"element", e.b[0]}, {"repeated", p}}}};
  }
  if (function != "jacobian") throw InputError("ba has no " + function);
  auto f = Entry<Four (*)(int64_t, int64_t, int64_t, Args, Args, Args, Args,
                          Indices, Indices)>(module, function);
  Four j{};
  Measure(input, results, timings, [&] {
    j = f(n, m, p, cams.data(), points.data(), weights.data(), features.data(),
          cam_of.data(), point_of.data());
    for (double* buffer : {j.a, j.b, j.c, j.d}) results.Hold(buffer);
  });
  // The CSR matrix (SPEC §3.7): 2p residual rows of 15 entries, then p
  // weight rows of one; blocks j.a = f64[cp, uv, obs], j.b = f64[xyz, uv,
  // obs], j.c = f64[uv, obs], j.d = f64[obs].
  const int64_t entries = 31 * p;
  auto row_start = [&](int64_t r) -> int64_t {
    return r <= 2 * p ? 15 * r : 30 * p + (r - 2 * p);
  };
  auto column = [&](int64_t e) -> int64_t {
    if (e >= 30 * p) return 11 * n + 3 * m + (e - 30 * p);
    const int64_t i = e / 30, at = e % 15;
    if (at < 11) return 11 * (i % n) + at;
    if (at < 14) return 11 * n + 3 * (i % m) + (at - 11);
    return 11 * n + 3 * m + i;
  };
  auto value = [&](int64_t e) -> double {
    if (e >= 30 * p) return j.d[e - 30 * p];
    const int64_t i = e / 30, u = (e / 15) % 2, at = e % 15;
    if (at < 11) return j.a[(at * 2 + u) * p + i];
    if (at < 14) return j.b[((at - 11) * 2 + u) * p + i];
    return j.c[u * p + i];
  };
  return {{"rows", Truncated(3 * p + 1, row_start)},
          {"cols", Truncated(entries, column)},
          {"vals", Truncated(entries, value)}};
}

json Lstm(const Module& module, const std::string& function, const json& input,
          json& timings) {
  const Array main = Read(input, "main_params", 2),
              extra = Read(input, "extra_params", 2);
  const Array state = Read(input, "state", 2),
              sequence = Read(input, "sequence", 2);
  const int64_t l = main.Dim(0) / 2, b = main.Dim(1) / 4, c = sequence.Dim(0);
  if (l < 1 || main.Dim(0) != 2 * l || main.Dim(1) != 4 * b || b < 1 ||
      extra.shape != std::vector<int64_t>{3, b} ||
      state.shape != std::vector<int64_t>{2 * l, b} || sequence.Dim(1) != b ||
      c < 2)
    throw InputError("lstm: the arrays' sizes do not agree");
  // main_params [2l][4b] = [lay][wb][gate][b] -> f64[wb, gate, lay, b];
  // state [2l][b] = [lay][hc][b] -> f64[hc, lay, b].
  std::vector<double> weights(8 * l * b), hidden(2 * l * b);
  for (int64_t layer = 0; layer < l; ++layer)
    for (int64_t row = 0; row < 2; ++row) {
      for (int64_t gate = 0; gate < 4; ++gate)
        for (int64_t lane = 0; lane < b; ++lane)
          weights[((row * 4 + gate) * l + layer) * b + lane] =
              main.data[(2 * layer + row) * 4 * b + gate * b + lane];
      for (int64_t lane = 0; lane < b; ++lane)
        hidden[(row * l + layer) * b + lane] =
            state.data[(2 * layer + row) * b + lane];
    }
  using Args = const double*;
  Results results(module);
  if (function == "objective") {
    auto f =
        Entry<double (*)(int64_t, int64_t, int64_t, Args, Args, Args, Args)>(
            module, function);
    double y = 0;
    Measure(input, results, timings, [&] {
      y = f(l, c, b, weights.data(), extra.data.data(), hidden.data(),
            sequence.data.data());
    });
    return y;
  }
  if (function != "jacobian") throw InputError("lstm has no " + function);
  auto f = Entry<Two (*)(int64_t, int64_t, int64_t, Args, Args, Args, Args)>(
      module, function);
  Two g{};
  Measure(input, results, timings, [&] {
    g = f(l, c, b, weights.data(), extra.data.data(), hidden.data(),
          sequence.data.data());
    results.Hold(g.a);
    results.Hold(g.b);
  });
  std::vector<double> out;
  for (int64_t layer = 0; layer < l; ++layer)
    for (int64_t row = 0; row < 2; ++row)
      for (int64_t gate = 0; gate < 4; ++gate)
        for (int64_t lane = 0; lane < b; ++lane)
          out.push_back(g.a[((row * 4 + gate) * l + layer) * b + lane]);
  out.insert(out.end(), g.b, g.b + 3 * b);
  return out;
}

json Det(const Module& module, const std::string& function, const json& input,
         json& timings) {
  const Array a = Read(input, "A", 1);
  const int64_t ell = Integer(Field(input, "ell"), "ell");
  if (ell < 1 || a.Dim(0) != ell * ell)
    throw InputError("det: A must hold ell * ell numbers");
  Results results(module);
  if (function == "primal") {
    auto f =
        Entry<double (*)(int64_t, int64_t, const double*)>(module, function);
    double y = 0;
    Measure(input, results, timings, [&] { y = f(ell, ell, a.data.data()); });
    return y;
  }
  if (function != "gradient") throw InputError("det has no " + function);
  auto f =
      Entry<double* (*)(int64_t, int64_t, const double*)>(module, function);
  double* g = nullptr;
  Measure(input, results, timings,
          [&] { results.Hold(g = f(ell, ell, a.data.data())); });
  return List(g, ell * ell);
}

// Integers read from a list (indices): every element must be integral.
std::vector<int64_t> Integers(const Array& array, const char* what) {
  std::vector<int64_t> out;
  out.reserve(array.data.size());
  for (double value : array.data) {
    if (value != static_cast<double>(static_cast<int64_t>(value)))
      throw InputError(std::string(what) + " holds a non-integer");
    out.push_back(static_cast<int64_t>(value));
  }
  return out;
}

// A row-major [n][rest] buffer as [rest][n] (the last dim becomes first
// after the leading one moves to the back).
template <typename T>
std::vector<T> MoveFirstLast(const std::vector<T>& data, int64_t n) {
  const int64_t rest = n == 0 ? 0 : static_cast<int64_t>(data.size()) / n;
  std::vector<T> out(data.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < rest; ++j) out[j * n + i] = data[i * rest + j];
  return out;
}

json Ht(const Module& module, const std::string& function, const json& input,
        json& timings) {
  const Array theta = Read(input, "theta", 1);
  const json& data = Field(input, "data");
  const json& model = Field(data, "model");
  const int64_t bones = Integer(Field(model, "bone_count"), "bone_count");
  const std::vector<int64_t> parents =
      Integers(Read(model, "parents", 1), "parents");
  const Array relatives = Read(model, "base_relatives", 3),
              inverses = Read(model, "inverse_base_absolutes", 3);
  const Array positions = Read(model, "base_positions", 2),
              weights = Read(model, "weights", 2);
  const Array triangles_in = Read(model, "triangles", 2);
  const json& mirrored = Field(model, "is_mirrored");
  const std::vector<int64_t> corr =
      Integers(Read(data, "correspondences", 1), "correspondences");
  const Array points = Read(data, "points", 2), us = Read(input, "us", 2);
  const auto verts = positions.Dim(0), tris = triangles_in.Dim(0);
  const auto pts = static_cast<int64_t>(corr.size());
  // Empty `us`: the simple variant (SPEC §3.8).
  const bool complicated = us.Dim(0) > 0;
  const std::vector<int64_t> matrices{bones, 4, 4};
  if (theta.Dim(0) != 26 || !mirrored.is_boolean() ||
      static_cast<int64_t>(parents.size()) != bones ||
      relatives.shape != matrices || inverses.shape != matrices ||
      positions.Dim(1) != 4 ||
      weights.shape != std::vector<int64_t>{verts, bones} ||
      triangles_in.Dim(1) != 3 ||
      points.shape != std::vector<int64_t>{pts, 3} ||
      (complicated && us.shape != std::vector<int64_t>{pts, 2}))
    throw InputError("ht: the arrays' sizes do not agree");
  const std::vector<int64_t> triangles_rows =
      Integers(triangles_in, "triangles");
  for (int64_t b = 0; b < bones; ++b)
    if (parents[b] < -1 || parents[b] >= b)
      throw InputError("ht: a bone's parent must be -1 or an earlier bone");
  for (int64_t v : triangles_rows)
    if (v < 0 || v >= verts)
      throw InputError("ht: a triangle's vertex is out of range");
  for (int64_t c : corr)
    if (c < 0 || c >= (complicated ? tris : verts))
      throw InputError("ht: a correspondence is out of range");
  // The exported signatures' layouts (canonical dim order, see ht.dl):
  // matrices f64[row, col, bones], positions f64[col, verts], triangles
  // i64[corner, tris], points f64[xyz, pts], us f64[uv, pts].
  const std::vector<double> relatives_t = MoveFirstLast(relatives.data, bones),
                            inverses_t = MoveFirstLast(inverses.data, bones),
                            positions_t = MoveFirstLast(positions.data, verts),
                            points_t = MoveFirstLast(points.data, pts),
                            us_t = MoveFirstLast(us.data, pts);
  const std::vector<int64_t> triangles = MoveFirstLast(triangles_rows, tris);
  const bool is_mirrored = mirrored.get<bool>();
  using Args = const double*;
  using Indices = const int64_t*;
  Results results(module);
  if (function == "objective") {
    double* e = nullptr;
    if (complicated) {
      auto f = Entry<double* (*)(int64_t, int64_t, int64_t, int64_t, Args,
                                 Indices, Args, Args, Args, Args, bool, Indices,
                                 Indices, Args, Args)>(module, "objective");
      Measure(input, results, timings, [&] {
        results.Hold(e = f(verts, bones, tris, pts, theta.data.data(),
                           parents.data(), relatives_t.data(),
                           inverses_t.data(), positions_t.data(),
                           weights.data.data(), is_mirrored, triangles.data(),
                           corr.data(), points_t.data(), us_t.data()));
      });
    } else {
      auto f = Entry<double* (*)(int64_t, int64_t, int64_t, Args, Indices, Args,
                                 Args, Args, Args, bool, Indices, Args)>(
          module, "simple_objective");
      Measure(input, results, timings, [&] {
        results.Hold(e = f(verts, bones, pts, theta.data.data(), parents.data(),
                           relatives_t.data(), inverses_t.data(),
                           positions_t.data(), weights.data.data(), is_mirrored,
                           corr.data(), points_t.data()));
      });
    }
    // f64[xyz, pts] -> residual 3i + j.
    return MoveFirstLast(std::vector<double>(e, e + 3 * pts), 3);
  }
  if (function != "jacobian") throw InputError("ht has no " + function);
  // Row 3i + j: the derivatives by u_i (complicated only), then by theta;
  // blocks f64[uv, xyz, pts] and f64[th, xyz, pts].
  Two j{};
  if (complicated) {
    auto f =
        Entry<Two (*)(int64_t, int64_t, int64_t, int64_t, Args, Indices, Args,
                      Args, Args, Args, bool, Indices, Indices, Args, Args)>(
            module, "jacobian");
    Measure(input, results, timings, [&] {
      j = f(verts, bones, tris, pts, theta.data.data(), parents.data(),
            relatives_t.data(), inverses_t.data(), positions_t.data(),
            weights.data.data(), is_mirrored, triangles.data(), corr.data(),
            points_t.data(), us_t.data());
      results.Hold(j.a);
      results.Hold(j.b);
    });
  } else {
    auto f = Entry<double* (*)(int64_t, int64_t, int64_t, Args, Indices, Args,
                               Args, Args, Args, bool, Indices, Args)>(
        module, "simple_jacobian");
    Measure(input, results, timings, [&] {
      results.Hold(j.b = f(verts, bones, pts, theta.data.data(), parents.data(),
                           relatives_t.data(), inverses_t.data(),
                           positions_t.data(), weights.data.data(), is_mirrored,
                           corr.data(), points_t.data()));
    });
  }
  const int64_t block = 3 * pts;
  json out = json::array();
  for (int64_t i = 0; i < pts; ++i)
    for (int64_t c = 0; c < 3; ++c) {
      std::vector<double> row;
      const int64_t at = c * pts + i;
      if (complicated)
        for (int64_t u = 0; u < 2; ++u) row.push_back(j.a[u * block + at]);
      for (int64_t t = 0; t < 26; ++t) row.push_back(j.b[t * block + at]);
      out.push_back(std::move(row));
    }
  return out;
}

bool IsNestedMode(const std::string& function) {
  return function == "rr" || function == "ff" || function == "fr" ||
         function == "rf";
}

json Particle(const Module& module, const std::string& function,
              const json& input, json& timings) {
  if (!IsNestedMode(function)) throw InputError("particle has no " + function);
  auto f = Entry<double (*)(double)>(module, function);
  const double w = Number(Field(input, "w"), "w");
  double y = 0;
  Results results(module);
  Measure(input, results, timings, [&] { y = f(w); });
  return y;
}

json Saddle(const Module& module, const std::string& function,
            const json& input, json& timings) {
  if (!IsNestedMode(function)) throw InputError("saddle has no " + function);
  auto f = Entry<double* (*)(const double*)>(module, function);
  const Array start = Read(input, "start", 1);
  if (start.Dim(0) != 2) throw InputError("start must hold 2 numbers");
  double* y = nullptr;
  Results results(module);
  Measure(input, results, timings,
          [&] { results.Hold(y = f(start.data.data())); });
  return List(y, 4);
}

const std::map<std::string, Handler>& Evals() {
  static const std::map<std::string, Handler> evals = {
      {"hello", Hello},   {"llsq", Llsq},
      {"lse", Lse},       {"ode", Ode},
      {"kmeans", Kmeans}, {"gmm", Gmm},
      {"ba", Ba},         {"det", Det},
      {"lstm", Lstm},     {"particle", Particle},
      {"saddle", Saddle}, {"ht", Ht},
  };
  return evals;
}

// ---------------------------------------------------------------------------
// The protocol.

class Tool {
 public:
  json Answer(const json& message) {
    auto id = message.find("id");
    const json echo = id == message.end() ? json() : *id;
    json response = {{"id", echo}};
    try {
      auto kind_field = message.find("kind");
      const std::string kind =
          kind_field != message.end() && kind_field->is_string()
              ? kind_field->get<std::string>()
              : "";
      if (kind == "start") {
        response["tool"] = "delta";
      } else if (kind == "define") {
        Define(message, response);
      } else if (kind == "evaluate") {
        Evaluate(message, response);
      } else if (kind == "analysis") {
        if (message.value("valid", true) == false)
          std::cerr << "gradbench: evaluate "
                    << message.value("of", json()).dump()
                    << " was invalid: " << message.value("error", "") << "\n";
      }
    } catch (const std::exception& error) {
      response = {{"id", echo}, {"success", false}, {"error", error.what()}};
    }
    return response;
  }

 private:
  static std::string Text(const json& message, const char* key) {
    auto it = message.find(key);
    if (it == message.end() || !it->is_string())
      throw InputError(std::string("the message lacks \"") + key + "\"");
    return it->get<std::string>();
  }

  void Define(const json& message, json& response) {
    const std::string name = Text(message, "module");
    if (Evals().count(name) == 0) throw InputError(name + " is not supported");
    const auto start = Clock::now();
    if (modules_.count(name) == 0) modules_[name] = Load(name);
    const auto nanoseconds =
        std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() -
                                                             start)
            .count();
    response["success"] = true;
    response["timings"] =
        json::array({{{"name", "compile"}, {"nanoseconds", nanoseconds}}});
  }

  void Evaluate(const json& message, json& response) {
    const std::string name = Text(message, "module");
    const std::string function = Text(message, "function");
    auto module = modules_.find(name);
    if (module == modules_.end())
      throw InputError("module " + name + " is not defined");
    auto input = message.find("input");
    if (input == message.end()) throw InputError("the message lacks \"input\"");
    json timings = json::array();
    json output = Evals().at(name)(module->second, function, *input, timings);
    response["success"] = true;
    response["output"] = std::move(output);
    response["timings"] = std::move(timings);
  }

  std::map<std::string, Module> modules_;
};

}  // namespace

int main() {
  std::ios::sync_with_stdio(false);
  Tool tool;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json response;
    try {
      const json message = json::parse(line);
      if (!message.is_object())
        throw InputError("a message must be a JSON object");
      response = tool.Answer(message);
    } catch (const std::exception& error) {
      // Malformed JSON: there is no id to echo.
      response = {{"id", nullptr},
                  {"success", false},
                  {"error", std::string("bad message: ") + error.what()}};
    }
    std::cout << response.dump(-1, ' ', false, json::error_handler_t::replace)
              << "\n"
              << std::flush;
  }
  return 0;
}
