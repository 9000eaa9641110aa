// The language server's JSON-RPC loop: reads framed messages from stdin,
// keeps one Analysis per open document, and answers on stdout.
#include "compiler/lsp/server.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "compiler/lsp/analysis.h"

namespace delta::lsp {
namespace {

using json = nlohmann::json;

// JSON-RPC error codes.
constexpr int kParseError = -32700;
constexpr int kMethodNotFound = -32601;
constexpr int kInvalidRequest = -32600;

// Reads one `Content-Length`-framed message; false at end of input.
bool ReadMessage(std::istream& in, std::string& body) {
  size_t length = 0;
  bool have_length = false;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (have_length) break;
      continue;
    }
    constexpr llvm::StringLiteral kLength = "Content-Length:";
    if (llvm::StringRef(line).starts_with_insensitive(kLength)) {
      have_length = !llvm::StringRef(line)
                         .drop_front(kLength.size())
                         .trim()
                         .getAsInteger(10, length);
    }
  }
  if (!have_length) return false;
  body.resize(length);
  in.read(body.data(), static_cast<std::streamsize>(length));
  return static_cast<size_t>(in.gcount()) == length;
}

void WriteMessage(std::ostream& out, const json& message) {
  std::string body = message.dump();
  out << "Content-Length: " << body.size() << "\r\n\r\n" << body;
  out.flush();
}

// "file:///a/b.dl" -> "/a/b.dl" (percent escapes decoded).
std::string UriToPath(const std::string& uri) {
  llvm::StringRef rest(uri);
  if (!rest.consume_front("file://")) return uri;
  std::string path;
  for (size_t i = 0; i < rest.size(); ++i) {
    unsigned value = 0;
    if (rest[i] == '%' && i + 2 < rest.size() + 0 &&
        !rest.substr(i + 1, 2).getAsInteger(16, value)) {
      path += static_cast<char>(value);
      i += 2;
    } else {
      path += rest[i];
    }
  }
  return path;
}

// A name a rename may give: a letter or `_`, then letters, digits or `_`.
bool IsIdentifier(const std::string& name) {
  static const char* const kKeywords[] = {
      "fn",    "export", "struct", "dim",    "let", "loop", "for",  "in",
      "while", "if",     "else",   "import", "as",  "true", "false"};
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) ||
      std::find(std::begin(kKeywords), std::end(kKeywords), name) !=
          std::end(kKeywords))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

std::string PathToUri(const std::string& path) {
  std::string uri = "file://";
  for (char c : path) {
    if (std::isalnum(static_cast<unsigned char>(c)) ||
        llvm::StringRef("/-_.~").contains(c)) {
      uri += c;
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof(escaped), "%%%02X",
                    static_cast<unsigned char>(c));
      uri += escaped;
    }
  }
  return uri;
}

json ToJson(Position position) {
  return {{"line", position.line}, {"character", position.character}};
}

json ToJson(const Range& range) {
  return {{"start", ToJson(range.start)}, {"end", ToJson(range.end)}};
}

Position PositionFrom(const json& params) {
  const json& position = params.at("position");
  return {position.at("line").get<int>(), position.at("character").get<int>()};
}

class Server {
 public:
  Server(std::ostream& out, const ServerOptions& options)
      : out_(out), options_(options) {}

  // Returns false once `exit` arrived.
  bool Handle(const json& message) {
    std::string method = message.value("method", "");
    bool is_request = message.contains("id");
    json id = is_request ? message["id"] : json();
    json params = message.value("params", json::object());
    if (method == "exit") return false;
    try {
      if (method == "initialize") {
        Reply(id, Capabilities());
      } else if (method == "shutdown") {
        shutdown_ = true;
        Reply(id, nullptr);
      } else if (method == "textDocument/didOpen") {
        const json& document = params.at("textDocument");
        Update(document.at("uri"), document.at("text"));
      } else if (method == "textDocument/didChange") {
        // Full synchronization: the last change holds the whole text.
        const json& changes = params.at("contentChanges");
        if (!changes.empty())
          Update(params.at("textDocument").at("uri"),
                 changes.back().at("text"));
      } else if (method == "textDocument/didClose") {
        std::string uri = params.at("textDocument").at("uri");
        documents_.erase(uri);
        last_checked_.erase(uri);
        Publish(uri, json::array());
      } else if (method == "textDocument/hover") {
        const Analysis* analysis = Find(params);
        std::optional<std::string> hover =
            analysis ? analysis->Hover(PositionFrom(params)) : std::nullopt;
        Reply(id, hover ? json{{"contents",
                                {{"kind", "markdown"}, {"value", *hover}}}}
                        : json(nullptr));
      } else if (method == "textDocument/definition") {
        const Analysis* analysis = Find(params);
        std::optional<Location> location =
            analysis ? analysis->Definition(PositionFrom(params))
                     : std::nullopt;
        Reply(id, location ? json{{"uri", PathToUri(location->path)},
                                  {"range", ToJson(location->range)}}
                           : json(nullptr));
      } else if (method == "textDocument/completion") {
        const Analysis* analysis = Find(params);
        json items = json::array();
        if (analysis) {
          for (const CompletionInfo& item :
               analysis->Completion(PositionFrom(params)))
            items.push_back({{"label", item.label},
                             {"kind", item.kind},
                             {"detail", item.detail}});
        }
        Reply(id, {{"isIncomplete", false}, {"items", items}});
      } else if (method == "textDocument/references" ||
                 method == "textDocument/rename") {
        const Analysis* analysis = Find(params);
        std::vector<Location> locations =
            analysis ? analysis->References(PositionFrom(params))
                     : std::vector<Location>();
        if (method == "textDocument/references") {
          json result = json::array();
          for (const Location& location : locations)
            result.push_back({{"uri", PathToUri(location.path)},
                              {"range", ToJson(location.range)}});
          Reply(id, result);
        } else {
          std::string name = params.at("newName");
          if (!IsIdentifier(name)) {
            ReplyError(id, kInvalidRequest,
                       "'" + name + "' is not a Delta identifier");
          } else if (locations.empty()) {
            ReplyError(id, kInvalidRequest, "nothing to rename here");
          } else {
            // Names in other files (a module's own declarations) are left
            // alone: only this document's uses change.
            json edits = json::array();
            std::string uri = params.at("textDocument").at("uri");
            for (const Location& location : locations)
              if (PathToUri(location.path) == uri)
                edits.push_back(
                    {{"range", ToJson(location.range)}, {"newText", name}});
            Reply(id, {{"changes", {{uri, edits}}}});
          }
        }
      } else if (method == "textDocument/signatureHelp") {
        const Analysis* current = Find(params);
        auto checked = last_checked_.find(params.at("textDocument").at("uri"));
        std::optional<SignatureInfo> signature;
        if (current && checked != last_checked_.end())
          signature =
              checked->second->Signature(current->text(), PositionFrom(params));
        if (!signature) {
          Reply(id, nullptr);
        } else {
          json parameters = json::array();
          for (const std::string& param : signature->params)
            parameters.push_back({{"label", param}});
          json entry = {{"label", signature->label},
                        {"parameters", parameters}};
          if (!signature->docs.empty())
            entry["documentation"] = signature->docs;
          Reply(id, {{"signatures", json::array({entry})},
                     {"activeSignature", 0},
                     {"activeParameter", signature->active}});
        }
      } else if (method == "textDocument/documentSymbol") {
        const Analysis* analysis = Find(params);
        json symbols = json::array();
        if (analysis) {
          for (const SymbolInfo& symbol : analysis->Symbols())
            symbols.push_back({{"name", symbol.name},
                               {"kind", symbol.kind},
                               {"detail", symbol.detail},
                               {"range", ToJson(symbol.range)},
                               {"selectionRange", ToJson(symbol.selection)}});
        }
        Reply(id, symbols);
      } else if (method == "textDocument/formatting") {
        // `dlc fmt` on the whole text: one edit, or none with syntax errors.
        const Analysis* analysis = Find(params);
        std::optional<std::string> text =
            analysis ? analysis->Formatted() : std::nullopt;
        json edits = json::array();
        if (text)
          edits.push_back({{"range", ToJson(analysis->WholeDocument())},
                           {"newText", *text}});
        Reply(id, edits);
      } else if (is_request) {
        ReplyError(id, kMethodNotFound, "unsupported method '" + method + "'");
      }
    } catch (const json::exception& error) {
      if (is_request) ReplyError(id, kInvalidRequest, error.what());
    }
    return true;
  }

  bool shutdown() const { return shutdown_; }

 private:
  json Capabilities() const {
    return {{"capabilities",
             {{"textDocumentSync", 1},  // full text on every change
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"documentSymbolProvider", true},
              {"referencesProvider", true},
              {"signatureHelpProvider", {{"triggerCharacters", {"(", ","}}}},
              {"renameProvider", true},
              {"documentFormattingProvider", true},
              {"completionProvider", {{"triggerCharacters", {"."}}}}}},
            {"serverInfo", {{"name", "dlc lsp"}}}};
  }

  void Update(const std::string& uri, const std::string& text) {
    auto analysis =
        std::make_shared<Analysis>(UriToPath(uri), text, options_.stdlib_dirs);
    if (analysis->has_program()) last_checked_[uri] = analysis;
    json diagnostics = json::array();
    for (const DiagnosticInfo& info : analysis->diagnostics())
      diagnostics.push_back({{"range", ToJson(info.range)},
                             {"severity", info.severity},
                             {"code", info.code},
                             {"source", "dlc"},
                             {"message", info.message}});
    documents_[uri] = std::move(analysis);
    Publish(uri, diagnostics);
  }

  void Publish(const std::string& uri, json diagnostics) {
    WriteMessage(out_,
                 {{"jsonrpc", "2.0"},
                  {"method", "textDocument/publishDiagnostics"},
                  {"params", {{"uri", uri}, {"diagnostics", diagnostics}}}});
  }

  const Analysis* Find(const json& params) const {
    auto it = documents_.find(params.at("textDocument").at("uri"));
    return it == documents_.end() ? nullptr : it->second.get();
  }

  void Reply(const json& id, json result) {
    WriteMessage(out_, {{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
  }

  void ReplyError(const json& id, int code, const std::string& message) {
    WriteMessage(out_, {{"jsonrpc", "2.0"},
                        {"id", id},
                        {"error", {{"code", code}, {"message", message}}}});
  }

  std::ostream& out_;
  const ServerOptions& options_;
  std::map<std::string, std::shared_ptr<Analysis>> documents_;
  // The last analysis of each document that got as far as a program: a call
  // being typed rarely parses, and signature help looks its callee up here.
  std::map<std::string, std::shared_ptr<Analysis>> last_checked_;
  bool shutdown_ = false;
};

}  // namespace

int RunServer(std::istream& in, std::ostream& out,
              const ServerOptions& options) {
  Server server(out, options);
  std::string body;
  while (ReadMessage(in, body)) {
    json message = json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (message.is_discarded() || !message.is_object()) {
      WriteMessage(
          out,
          {{"jsonrpc", "2.0"},
           {"id", nullptr},
           {"error",
            {{"code", kParseError}, {"message", "the message is not JSON"}}}});
      continue;
    }
    if (!server.Handle(message)) return server.shutdown() ? 0 : 1;
  }
  return server.shutdown() ? 0 : 1;
}

}  // namespace delta::lsp
