// The GradBench tool for Delta: speaks the protocol of
// ../shared/gradbench/SPEC.md on stdin/stdout, compiles each eval's Delta
// module (bench/gradbench/modules/EVAL.dl) with `dlc build --lib` on
// `define`, and calls its exported functions through their C ABI on
// `evaluate` (the adapters in evals/). See docs/gradbench.md.
#include "tool.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace gradbench {

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

namespace {

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

}  // namespace

Array Read(const json& input, const char* key, size_t rank) {
  Array out;
  Flatten(Field(input, key), 0, rank, out, key);
  return out;
}

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

json List(const double* data, int64_t n) {
  return json(std::vector<double>(data, data + n));
}

Repeat RepeatOf(const json& input) {
  Repeat repeat;
  if (input.is_object() && input.contains("min_runs")) {
    repeat.min_runs = Integer(input["min_runs"], "min_runs");
    repeat.min_seconds = Number(Field(input, "min_seconds"), "min_seconds");
  }
  return repeat;
}

namespace {

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

// A generated header, with the path of the module it was made from (which
// it names) replaced, so that headers of one module read from two places
// compare equal.
std::string HeaderText(const std::string& path, const std::string& source) {
  std::ifstream file(path);
  if (!file) throw InputError("cannot read " + path);
  std::stringstream text;
  text << file.rdbuf();
  std::string header = text.str();
  for (size_t at = header.find(source); at != std::string::npos;
       at = header.find(source, at))
    header.replace(at, source.size(), "MODULE");
  return header;
}

// Compiles the module NAME.dl with `dlc build --lib -O3` into CACHE
// (libNAME.so, libNAME.a, NAME.h) and loads the shared library. Its
// header must be the one the tool was built with (GRADBENCH_ABI_DIR, see
// CMakeLists.txt): the adapters' calls are typed by that one.
Library Load(const std::string& name) {
  const std::string source =
      Env("GRADBENCH_MODULES", GRADBENCH_MODULES_DIR) + "/" + name + ".dl";
  const std::string cache = Env("GRADBENCH_CACHE", GRADBENCH_CACHE_DIR);
  if (access(source.c_str(), R_OK) != 0)
    throw InputError("no Delta module for " + name);
  if (RunCommand({Env("GRADBENCH_DLC", GRADBENCH_DLC_PATH), "build", "--lib",
                  "-O3", source, "-o", cache}) != 0)
    throw InputError("dlc could not compile " + source +
                     " (its messages are on stderr)");
  const std::string built_source =
      std::string(GRADBENCH_MODULES_DIR) + "/" + name + ".dl";
  if (HeaderText(cache + "/" + name + ".h", source) !=
      HeaderText(std::string(GRADBENCH_ABI_DIR) + "/" + name + ".h",
                 built_source))
    throw InputError(source +
                     " has another C interface than the module the tool was "
                     "built with: rebuild gradbench_tool");
  const std::string library = cache + "/lib" + name + ".so";
  void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw InputError(std::string("dlopen: ") + dlerror());
  return Library(handle);
}

const std::map<std::string, Adapter>& Evals() {
  static const std::map<std::string, Adapter> evals = {
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
    if (modules_.count(name) == 0) modules_.emplace(name, Load(name));
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

  std::map<std::string, Library> modules_;
};

}  // namespace
}  // namespace gradbench

int main() {
  using gradbench::json;
  std::ios::sync_with_stdio(false);
  gradbench::Tool tool;
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json response;
    try {
      const json message = json::parse(line);
      if (!message.is_object())
        throw gradbench::InputError("a message must be a JSON object");
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
