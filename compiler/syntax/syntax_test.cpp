// Unit tests of the lexer and parser: tokens, precedence, statement rules,
// every declaration form, error recovery and spans.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/syntax/ast_dump.h"
#include "compiler/syntax/lexer.h"
#include "compiler/syntax/parse.h"

namespace delta {
namespace {

// Parses one source text and keeps the buffer, diagnostics and AST alive so
// that spans can be checked.
class Parsed {
 public:
  explicit Parsed(llvm::StringRef source)
      : output_stream_(output_), diags_(sources_, output_stream_) {
    buffer_id_ = sources_.AddNewSourceBuffer(
        llvm::MemoryBuffer::getMemBufferCopy(source, "test.dl"), llvm::SMLoc());
    module_ = ParseModule(sources_, buffer_id_, arena_, diags_);
  }

  ast::Module& module() { return *module_; }
  std::string dump() { return ast::Dump(*module_); }
  const std::vector<Diagnostic>& errors() { return diags_.emitted(); }
  std::vector<DiagKind> error_kinds() {
    std::vector<DiagKind> kinds;
    for (const Diagnostic& d : errors()) kinds.push_back(d.kind);
    return kinds;
  }
  // The source text a span covers.
  std::string Text(Span span) { return std::string(span.begin, span.end); }
  // "line:col" of a span's start.
  std::string Where(Span span) {
    auto [line, col] = sources_.getLineAndColumn(span.Start(), buffer_id_);
    return std::to_string(line) + ":" + std::to_string(col);
  }

 private:
  llvm::SourceMgr sources_;
  std::string output_;
  llvm::raw_string_ostream output_stream_;
  DiagnosticEngine diags_;
  ast::Arena arena_;
  unsigned buffer_id_ = 0;
  ast::Module* module_ = nullptr;
};

// The value of `let e = SOURCE;`, dumped; fails the test on any error.
std::string Expr(const std::string& source) {
  Parsed parsed("let e = " + source + ";");
  for (const Diagnostic& d : parsed.errors()) FAIL_CHECK(d.message);
  REQUIRE(parsed.module().decls.size() == 1);
  return ast::Dump(llvm::cast<ast::LetDecl>(parsed.module().decls[0])->value);
}

// The body of `fn f() { SOURCE }`, dumped; fails the test on any error.
std::string Body(const std::string& source) {
  Parsed parsed("fn f() { " + source + " }");
  for (const Diagnostic& d : parsed.errors()) FAIL_CHECK(d.message);
  REQUIRE(parsed.module().decls.size() == 1);
  return ast::Dump(llvm::cast<ast::FnDecl>(parsed.module().decls[0])->body);
}

std::string Decls(const std::string& source) {
  Parsed parsed(source);
  for (const Diagnostic& d : parsed.errors()) FAIL_CHECK(d.message);
  return parsed.dump();
}

std::vector<DiagKind> Errors(const std::string& source) {
  return Parsed(source).error_kinds();
}

// The tokens of SOURCE, space-separated: identifiers and punctuation as
// written, literals as int:VALUE, float:TEXT, str:TEXT plus any suffix.
std::string Lex(const std::string& source, unsigned* errors = nullptr) {
  llvm::SourceMgr sources;
  std::string output;
  llvm::raw_string_ostream stream(output);
  DiagnosticEngine diags(sources, stream);
  unsigned id = sources.AddNewSourceBuffer(
      llvm::MemoryBuffer::getMemBufferCopy(source, "lex.dl"), llvm::SMLoc());
  const llvm::MemoryBuffer* buffer = sources.getMemoryBuffer(id);
  syntax::Lexer lexer(buffer->getBufferStart(), buffer->getBufferEnd(), diags);
  std::string out;
  for (syntax::Token token = lexer.Next(); token.kind != syntax::TokenKind::End;
       token = lexer.Next()) {
    if (!out.empty()) out += " ";
    const char* suffixes[] = {"", "f32", "f64", "i32", "i64"};
    const char* suffix = suffixes[static_cast<int>(token.suffix)];
    switch (token.kind) {
      case syntax::TokenKind::IntLit:
        out += "int:" + std::to_string(token.int_value) + suffix;
        break;
      case syntax::TokenKind::FloatLit:
        out += "float:" + token.text + suffix;
        break;
      case syntax::TokenKind::StringLit:
        out += "str:" + token.text;
        break;
      default:
        out += std::string(token.span.begin, token.span.end);
    }
  }
  if (errors != nullptr) *errors = diags.error_count();
  return out;
}

// ---------------------------------------------------------------------------
// Lexer.

TEST_CASE("lexer: integer and float literals") {
  CHECK(Lex("42 1_000 0") == "int:42 int:1000 int:0");
  CHECK(Lex("1.0, .5, 1e-3, 2.5E+3, 1_0.2_5") ==
        "float:1.0 , float:.5 , float:1e-3 , float:2.5E+3 , float:10.25");
  CHECK(Lex("2.0f64 3i32 7i64 1.5f32 4f32") ==
        "float:2.0f64 int:3i32 int:7i64 float:1.5f32 int:4f32");
  CHECK(Lex("18446744073709551615") == "int:18446744073709551615");
}

TEST_CASE("lexer: ranges and tuple indices are not floats") {
  CHECK(Lex("0..10") == "int:0 .. int:10");
  CHECK(Lex("t.0") == "t . int:0");
  CHECK(Lex("t.0.1") == "t . int:0 . int:1");
  CHECK(Lex("x.1.0") == "x . int:1 . int:0");
  CHECK(Lex("f(x).0") == "f ( x ) . int:0");
  CHECK(Lex("a[i].1") == "a [ i ] . int:1");
  CHECK(Lex("x + .5") == "x + float:.5");
  CHECK(Lex("(.5)") == "( float:.5 )");
}

TEST_CASE("lexer: keywords, identifiers and operators") {
  CHECK(Lex("fn export struct dim let loop for in while if else import as "
            "true false inp _ _x9") ==
        "fn export struct dim let loop for in while if else import as true "
        "false inp _ _x9");
  CHECK(Lex("+ - * / % ^ == != < <= > >= && || ! = -> : , . .. ; ( ) [ ] "
            "{ } @ |") ==
        "+ - * / % ^ == != < <= > >= && || ! = -> : , . .. ; ( ) [ ] { } @ "
        "|");
  CHECK(Lex("a->b<=c") == "a -> b <= c");
}

TEST_CASE("lexer: comments nest and may hold UTF-8") {
  CHECK(Lex("a // c\xc3\xa9 */\nb") == "a b");
  CHECK(Lex("a /* x /* y */ z */ b") == "a b");
  CHECK(Lex("a /* \xe2\x88\x82 */ b") == "a b");
}

TEST_CASE("lexer: strings decode escapes") {
  CHECK(Lex(R"("a\n\t\\\"b")") == "str:a\n\t\\\"b");
  CHECK(Lex("\"w: \xc3\xa9\"") == "str:w: \xc3\xa9");
}

TEST_CASE("lexer: malformed input is reported and skipped") {
  unsigned errors = 0;
  CHECK(Lex("a # b", &errors) == "a b");
  CHECK(errors == 1);
  CHECK(Lex("a \xc3\xa9 b", &errors) == "a b");
  CHECK(errors == 1);
  CHECK(Lex("a \xff\xfe\xfd b", &errors) == "a b");  // one run, one error
  CHECK(errors == 1);
  CHECK(Lex(std::string("a \0 b", 5), &errors) == "a b");
  CHECK(errors == 1);
  CHECK(Lex("a /* b", &errors) == "a");
  CHECK(errors == 1);
  CHECK(Lex("\"abc", &errors) == "str:abc");
  CHECK(errors == 1);
}

TEST_CASE("lexer: literal errors have their own kinds") {
  CHECK(Errors("let x = 99999999999999999999;") ==
        std::vector{DiagKind::InvalidNumber});
  CHECK(Errors("let x = 1e;") == std::vector{DiagKind::InvalidNumber});
  CHECK(Errors("let x = 2.0i32;") == std::vector{DiagKind::InvalidSuffix});
  CHECK(Errors("let x = 2u8;") == std::vector{DiagKind::InvalidSuffix});
  CHECK(Errors("let x = \"a\\q\";") == std::vector{DiagKind::InvalidEscape});
  CHECK(Errors("let x = \"a\nb\";").front() == DiagKind::UnterminatedString);
  CHECK(Errors("/* never closed") ==
        std::vector{DiagKind::UnterminatedComment});
  CHECK(Errors("let x\xe2\x82\x82 = 1;").front() == DiagKind::InvalidCharacter);
  CHECK(Errors("let x = 1;\x80").front() == DiagKind::InvalidUtf8);
  CHECK(Errors("let x = 1;\x01") == std::vector{DiagKind::InvalidCharacter});
}

// ---------------------------------------------------------------------------
// Expressions.

TEST_CASE("precedence and associativity") {
  CHECK(Expr("a + b * c") == "(+ a (* b c))");
  CHECK(Expr("a - b - c") == "(- (- a b) c)");
  CHECK(Expr("-x ^ 2.0") == "(neg (^ x 2.0))");
  CHECK(Expr("x ^ -1.0") == "(^ x (neg 1.0))");
  CHECK(Expr("x ^ y ^ z") == "(^ x (^ y z))");
  CHECK(Expr("x ^ -y * z") == "(* (^ x (neg y)) z)");
  CHECK(Expr("a || b && !c == d") == "(|| a (&& b (== (not c) d)))");
  CHECK(Expr("a < b + 1 && c >= d % 2") == "(&& (< a (+ b 1)) (>= c (% d 2)))");
  CHECK(Expr("(a < b) == c") == "(== (< a b) c)");
  CHECK(Expr("-f(x)[i].w") == "(neg (. (index (call f x) i) w))");
}

TEST_CASE("postfix forms") {
  CHECK(Expr("grad(f, wrt: p)(x)") == "(call (call grad f wrt:p) x)");
  CHECK(Expr("x[i, feat: 3,]") == "(index x i feat:3)");
  CHECK(Expr("softmax[d: classes](logits)") ==
        "(call (index softmax d:classes) logits)");
  CHECK(Expr("t.0.1") == "(. (. t 0) 1)");
  CHECK(Expr("p.l1.w") == "(. (. p l1) w)");
  CHECK(Expr("nn.dense(x)") == "(call (. nn dense) x)");
  CHECK(Expr("f()") == "(call f)");
}

TEST_CASE("primaries: literals, tuples, struct literals, blocks") {
  CHECK(Expr("true") == "true");
  CHECK(Expr("\"s\"") == "\"s\"");
  CHECK(Expr("()") == "(tuple)");
  CHECK(Expr("(a)") == "a");
  CHECK(Expr("(a,)") == "(tuple a)");
  CHECK(Expr("(a, b,)") == "(tuple a b)");
  CHECK(Expr("Dense { w: w0, b: b0 }") == "(struct Dense (w w0) (b b0))");
  CHECK(Expr("nn.Dense { w: w0, b: b0, }") ==
        "(struct nn.Dense (w w0) (b b0))");
  CHECK(Expr("Mlp { l1: x, ..p }") == "(struct Mlp (l1 x) (.. p))");
  CHECK(Expr("Mlp { ..p }") == "(struct Mlp (.. p))");
  CHECK(Expr("S {}") == "(struct S)");
  CHECK(Expr("{ let a = 1; a }") == "(block (let a 1) a)");
  CHECK(Expr("{ f(x); }") == "(block (stmt (call f x);))");
  CHECK(Expr("p - 0.1 * g") == "(- p (* 0.1 g))");
}

TEST_CASE("if, loops and comprehensions") {
  CHECK(Expr("if x > 0.0 { x } else if x > -1.0 { 0.5 * x } else { 0.0 }") ==
        "(if (> x 0.0) (block x) (if (> x (neg 1.0)) (block (* 0.5 x)) "
        "(block 0.0)))");
  CHECK(Expr("loop acc = 0.0 for k in 0..10 { acc + f32(k) }") ==
        "(loop-range acc 0.0 k 0 10 (block (+ acc (call f32 k))))");
  CHECK(Expr("loop st = h0 for t in time { cell(st, xs[t]) }") ==
        "(loop-for st h0 t time (block (call cell st (index xs t))))");
  CHECK(Expr("loop (a, b) = (0.0, 1.0) while a < 100.0 { (b, a + b) }") ==
        "(loop-while (pat a b) (tuple 0.0 1.0) (< a 100.0) "
        "(block (tuple b (+ a b))))");
  CHECK(Expr("for i in a, j in b { x[i] * y[j] }") ==
        "(for (i a) (j b) (block (* (index x i) (index y j))))");
  CHECK(Expr("for i in a, { i }") == "(for (i a) (block i))");
  CHECK(Expr("loop s = 0 for k in lo..hi + 1 { s }") ==
        "(loop-range s 0 k lo (+ hi 1) (block s))");
  CHECK(Expr("if c { 1.0 } else { 2.0 } + 1.0") ==
        "(+ (if c (block 1.0) (block 2.0)) 1.0)");
}

TEST_CASE("struct literals are not read in conditions and domains") {
  CHECK(Expr("for i in feat { i }") == "(for (i feat) (block i))");
  CHECK(Expr("if ok { a } else { b }") == "(if ok (block a) (block b))");
  CHECK(Expr("loop s = x while s < n { s }") ==
        "(loop-while s x (< s n) (block s))");
  CHECK(Expr("if p == (S { a: 1 }) { 1 } else { 2 }") ==
        "(if (== p (struct S (a 1))) (block 1) (block 2))");
  CHECK(Expr("for i in f(S { a: 1 }) { i }") ==
        "(for (i (call f (struct S (a 1)))) (block i))");
  CHECK(Errors("fn f() { for i in S { a: 1 } { i } }") ==
        std::vector{DiagKind::StructLiteralNotAllowed});
  CHECK(Errors("fn f() { if x == S { ..p } { 1 } }") ==
        std::vector{DiagKind::StructLiteralNotAllowed});
}

TEST_CASE("lambdas") {
  CHECK(Expr("|x| x * 2.0") == "(lambda (x) (* x 2.0))");
  CHECK(Expr("|x: f32, y: f32| -> f32 { x * y }") ==
        "(lambda (x:f32 y:f32) -> f32 (block (* x y)))");
  CHECK(Expr("|x| |y| x + y") == "(lambda (x) (lambda (y) (+ x y)))");
  CHECK(Expr("|| 1") == "(lambda () 1)");
  CHECK(Expr("reduce(|a, b,| a + b, 0.0, x, d)") ==
        "(call reduce (lambda (a b) (+ a b)) 0.0 x d)");
}

// ---------------------------------------------------------------------------
// Statements.

TEST_CASE("blocks: statements and result") {
  CHECK(Body("let x: f32[n] = a; dim t1 = size(t) - 1; x") ==
        "(block (let x : f32[n] a) (dim t1 (- (call size t) 1)) x)");
  CHECK(Body("print(x);") == "(block (stmt (call print x);))");
  CHECK(Body("") == "(block)");
  CHECK(Body("let (a, (b, _)) = t; let (c,) = u; a") ==
        "(block (let (pat a (pat b _)) t) (let (pat c) u) a)");
}

TEST_CASE("an if/loop/for that starts a statement ends at its brace") {
  CHECK(Body("if c { a } else { b } - x") ==
        "(block (stmt (if c (block a) (block b))) (neg x))");
  CHECK(Body("if c { a } else { b }") == "(block (if c (block a) (block b)))");
  CHECK(Body("if c { a } else { b };") ==
        "(block (stmt (if c (block a) (block b));))");
  CHECK(Body("for i in d { x } (y, z)") ==
        "(block (stmt (for (i d) (block x))) (tuple y z))");
  CHECK(Body("loop s = 0 for k in 0..3 { s } !y") ==
        "(block (stmt (loop-range s 0 k 0 3 (block s))) (not y))");
  CHECK(Body("if c { a } else { b } [k: x, y]") ==
        "(block (stmt (if c (block a) (block b))) (array k x y))");
}

TEST_CASE("array literals name their dim; `[` after an expression indexes") {
  CHECK(Expr("[k: a, b + 1, f(c)]") == "(array k a (+ b 1) (call f c))");
  CHECK(Expr("[k: a,]") == "(array k a)");
  CHECK(Expr("[two: [k: 1, 2], [k: 3, 4]]") ==
        "(array two (array k 1 2) (array k 3 4))");
  CHECK(Expr("[k: 1, 2][k: 0]") == "(index (array k 1 2) k:0)");
  CHECK(Expr("x[k: 1, 2]") == "(index x k:1 2)");
  CHECK(Expr("-[k: x, y] * 2.0") == "(* (neg (array k x y)) 2.0)");
}

// ---------------------------------------------------------------------------
// Declarations.

TEST_CASE("every declaration form") {
  CHECK(Decls("dim feat = 784; dim feat2 = feat;") ==
        "(dim feat 784)\n(dim feat2 feat)\n");
  CHECK(Decls("struct Dense[i, o] { w: f32[i, o], b: f32[o], }") ==
        "(struct Dense[i,o] (w f32[i,o]) (b f32[o]))\n");
  CHECK(Decls("struct Mlp { l1: nn.Dense[feat, hidden][batch] }") ==
        "(struct Mlp (l1 nn.Dense[feat,hidden][batch]))\n");
  CHECK(Decls("import nn; import nn as n;") ==
        "(import nn)\n(import nn as n)\n");
  CHECK(Decls("let learning_rate = 0.1; let (a, b): (f32, f32) = t;") ==
        "(let learning_rate 0.1)\n(let (pat a b) : (f32, f32) t)\n");
  CHECK(Decls("fn main() {}") == "(fn main() (block))\n");
  CHECK(Decls("export fn loss[n](w: f32[feat], y: f32[n],) -> f32 { y }") ==
        "(fn export loss[n](w:f32[feat] y:f32[n]) -> f32 (block y))\n");
  CHECK(Decls("@vjp(logsumexp)\nfn r[d](x: f32[d], y: f32, dy: f32) -> "
              "f32[d] { dy }") ==
        "(fn @vjp(logsumexp) r[d](x:f32[d] y:f32 dy:f32) -> f32[d] "
        "(block dy))\n");
  CHECK(Decls("fn t(x: (f32, f32[n])[b], u: (f32,), v: (), i: feat) {}") ==
        "(fn t(x:(f32, f32[n])[b] u:(f32,) v:() i:feat) (block))\n");
}

// ---------------------------------------------------------------------------
// Errors.

TEST_CASE("chained comparisons are non-associative") {
  Parsed parsed("let x = a < b < c;");
  REQUIRE(parsed.errors().size() == 1);
  CHECK(parsed.errors()[0].kind == DiagKind::NonAssociative);
  CHECK(parsed.Where(parsed.errors()[0].span) == "1:15");
  CHECK(parsed.Text(parsed.errors()[0].span) == "<");
  CHECK(Errors("let x = a == b != c;") ==
        std::vector{DiagKind::NonAssociative});
  CHECK(Errors("let x = (a < b) < c;").empty());
  CHECK(Errors("fn f() { loop s = 0 for k in 0..1..2 { s } }") ==
        std::vector{DiagKind::NonAssociative});
}

TEST_CASE("several syntax errors are reported from one file") {
  Parsed parsed(
      "fn f() {\n"
      "  let x = 1\n"
      "  let y = ;\n"
      "  x + y\n"
      "}\n"
      "dim d = 3\n"
      "fn g(a: f32) -> f32 { a }\n"
      "struct S { a f32 }\n");
  REQUIRE(parsed.errors().size() == 4);
  CHECK(parsed.errors()[0].message ==
        "expected ';' after let statement, found 'let'");
  CHECK(parsed.Where(parsed.errors()[0].span) == "3:3");
  CHECK(parsed.errors()[1].message == "expected expression, found ';'");
  CHECK(parsed.errors()[2].message ==
        "expected ';' after dim declaration, found 'fn'");
  CHECK(parsed.errors()[3].message == "expected ':', found identifier 'f32'");
  // The declarations around the errors survive.
  CHECK(parsed.dump().find("(fn g(a:f32) -> f32 (block a))") !=
        std::string::npos);
}

TEST_CASE("error messages name the user's tokens") {
  CHECK(Parsed("fn f() { let x = 1 + ; }").errors()[0].message ==
        "expected expression, found ';'");
  CHECK(Parsed("fn f( { }").errors()[0].message ==
        "expected identifier or ')', found '{'");
  CHECK(Parsed("let = 1;").errors()[0].message ==
        "expected identifier or '(', found '='");
  CHECK(Parsed("fn f() { ) }").errors()[0].message ==
        "expected statement or '}', found ')'");
  CHECK(Parsed("}").errors()[0].message == "expected declaration, found '}'");
  CHECK(Parsed("fn f() { a b }").errors()[0].message ==
        "expected ';' or '}', found identifier 'b'");
  CHECK(Parsed("fn f() { a").errors()[0].message ==
        "expected ';' or '}', found end of file");
}

TEST_CASE("a range is only a loop domain") {
  CHECK(Errors("let x = for i in 0..3 { i };") ==
        std::vector{DiagKind::SyntaxError});
  CHECK(Errors("let x = 0..3;") == std::vector{DiagKind::SyntaxError});
}

TEST_CASE("error cascades are capped") {
  std::string source;
  for (int i = 0; i < 200; ++i) source += "let = ;\n";
  CHECK(Errors(source).size() <= 20);
  std::string garbage;
  for (int i = 0; i < 200; ++i) garbage += "# \x01 ";
  CHECK(Errors(garbage).size() <= 20);
}

TEST_CASE("deep nesting is refused, not a stack overflow") {
  std::string parens(100000, '(');
  CHECK(Errors("let x = " + parens + "1;").front() == DiagKind::SyntaxError);
  std::string deep;
  for (int i = 0; i < 300; ++i) deep += "(1,";
  deep += "1";
  for (int i = 0; i < 300; ++i) deep += ")";
  CHECK(Errors("let x = " + deep + ";") == std::vector{DiagKind::TooDeep});
  std::string sum = "1";
  for (int i = 0; i < 100000; ++i) sum += "+1";
  CHECK(Errors("let x = " + sum + ";") == std::vector{DiagKind::TooDeep});
  std::string negs(100000, '-');
  CHECK(Errors("let x = " + negs + "1;") == std::vector{DiagKind::TooDeep});
  std::string nested_parens(200, '(');
  std::string closing(200, ')');
  CHECK(Errors("let x = " + nested_parens + "1" + closing + ";").empty());
}

TEST_CASE("arbitrary bytes never crash the parser") {
  std::string bytes;
  for (int i = 0; i < 4096; ++i) bytes += static_cast<char>((i * 7919) % 256);
  Parsed parsed(bytes);
  CHECK(!parsed.errors().empty());
  Parsed empty("");
  CHECK(empty.errors().empty());
  CHECK(empty.module().decls.empty());
}

// ---------------------------------------------------------------------------
// Spans.

TEST_CASE("spans cover the source of each node") {
  Parsed parsed(
      "fn f(x: f32[n], y: f32) -> f32 {\n"
      "  let z = (x + y) * 2.0;\n"
      "  g(z, wrt: x)[i].0\n"
      "}\n");
  REQUIRE(parsed.errors().empty());
  auto* fn = llvm::cast<ast::FnDecl>(parsed.module().decls[0]);
  CHECK(parsed.Text(fn->name.span) == "f");
  CHECK(parsed.Text(fn->params[0].span) == "x: f32[n]");
  CHECK(parsed.Text(fn->params[0].type->span) == "f32[n]");
  CHECK(parsed.Text(fn->result_type->span) == "f32");
  CHECK(parsed.Text(fn->span).rfind("fn f(", 0) == 0);
  CHECK(parsed.Text(fn->body->span).front() == '{');
  auto* let = llvm::cast<ast::LetStmt>(fn->body->stmts[0]);
  CHECK(parsed.Text(let->span) == "let z = (x + y) * 2.0;");
  auto* mul = llvm::cast<ast::BinaryExpr>(let->value);
  CHECK(parsed.Text(mul->span) == "(x + y) * 2.0");
  CHECK(parsed.Text(mul->op_span) == "*");
  CHECK(parsed.Text(mul->lhs->span) == "x + y");
  auto* tuple_index = llvm::cast<ast::TupleIndexExpr>(fn->body->result);
  CHECK(parsed.Text(tuple_index->span) == "g(z, wrt: x)[i].0");
  CHECK(parsed.Text(tuple_index->index_span) == "0");
  auto* index = llvm::cast<ast::IndexExpr>(tuple_index->base);
  CHECK(parsed.Text(index->span) == "g(z, wrt: x)[i]");
  auto* call = llvm::cast<ast::CallExpr>(index->base);
  CHECK(parsed.Text(call->args[1].label->span) == "wrt");
  CHECK(parsed.Where(call->span) == "3:3");
}

TEST_CASE("spans of declarations exclude surrounding whitespace") {
  Parsed parsed("  // comment\n  @vjp(f) fn r() {}  \n\n  dim d = 3;  ");
  REQUIRE(parsed.errors().empty());
  CHECK(parsed.Text(parsed.module().decls[0]->span) == "@vjp(f) fn r() {}");
  CHECK(parsed.Text(parsed.module().decls[1]->span) == "dim d = 3;");
  auto* fn = llvm::cast<ast::FnDecl>(parsed.module().decls[0]);
  CHECK(parsed.Text(fn->attributes[0].span) == "@vjp(f)");
}

}  // namespace
}  // namespace delta
