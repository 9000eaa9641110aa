// `dlc lsp`: a Language Server Protocol server on stdin/stdout.
#pragma once

#include <istream>
#include <ostream>
#include <string>
#include <vector>

namespace delta::lsp {

struct ServerOptions {
  // Folders searched for `import NAME;` after the document's folder.
  std::vector<std::string> stdlib_dirs;
};

// Serves one client until `exit` or end of input. Returns the exit status
// the protocol asks for: 0 after `shutdown`, 1 otherwise.
int RunServer(std::istream& in, std::ostream& out,
              const ServerOptions& options);

}  // namespace delta::lsp
