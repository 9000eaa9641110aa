// The Delta extension: starts `dlc lsp` as a language server on stdio for
// .dl files (diagnostics as you type, hover, go to definition, completion).
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const dlc = vscode.workspace.getConfiguration("delta").get("dlcPath", "dlc");
  const server = { command: dlc, args: ["lsp"] };
  client = new LanguageClient(
    "delta",
    "Delta language server",
    { run: server, debug: server },
    { documentSelector: [{ scheme: "file", language: "delta" }] }
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
