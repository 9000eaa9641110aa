// The lexer's scanning rules (re2c input); see docs/internals/syntax.md for
// the design and lexer.h for the interface.
#include "compiler/syntax/lexer.h"

#include <cstdio>

namespace delta::syntax {

/*!re2c
  re2c:api = custom;
  re2c:api:style = free-form;
  re2c:define:YYCTYPE = "unsigned char";
  // Every read is bounds-checked, so the buffer needs no sentinel byte and
  // an embedded NUL is an ordinary (invalid) character.
  re2c:define:YYPEEK = "(cursor_ < limit_ ? static_cast<unsigned char>(*cursor_) : 0)";
  re2c:define:YYSKIP = "++cursor_;";
  re2c:define:YYBACKUP = "marker_ = cursor_;";
  re2c:define:YYRESTORE = "cursor_ = marker_;";
  re2c:define:YYLESSTHAN = "(limit_ - cursor_) < @@{len}";
  re2c:eof = 0;
  re2c:yyfill:enable = 0;

  utf8_tail = [\x80-\xbf];
  utf8_multi = [\xc2-\xdf] utf8_tail
             | [\xe0] [\xa0-\xbf] utf8_tail
             | [\xe1-\xec\xee\xef] utf8_tail utf8_tail
             | [\xed] [\x80-\x9f] utf8_tail
             | [\xf0] [\x90-\xbf] utf8_tail utf8_tail
             | [\xf1-\xf3] utf8_tail utf8_tail utf8_tail
             | [\xf4] [\x80-\x8f] utf8_tail utf8_tail;
  dec = [0-9][0-9_]*;
  exp = [eE] [+-]? [0-9][0-9_]*;
  ident = [A-Za-z_][A-Za-z0-9_]*;
  control = [\x00-\x08\x0b\x0c\x0e-\x1f\x7f];
*/

namespace {

constexpr llvm::StringRef kSpellings[] = {
#define DELTA_TOKEN_SPELLING(Name, Spelling) Spelling,
    DELTA_TOKENS(DELTA_TOKEN_SPELLING)
#undef DELTA_TOKEN_SPELLING
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::string Hex(unsigned char c) {
  char buffer[8];
  std::snprintf(buffer, sizeof buffer, "0x%02X", c);
  return buffer;
}

}  // namespace

llvm::StringRef TokenSpelling(TokenKind kind) {
  return kSpellings[static_cast<int>(kind)];
}

Lexer::Lexer(const char* begin, const char* end, DiagnosticEngine& diags)
    : cursor_(begin), limit_(end), diags_(diags) {}

void Lexer::Error(DiagKind kind, Span span, std::string message) {
  // A run of bad bytes is one mistake: report its first byte only.
  if (span.begin == last_error_end_ && kind == last_error_kind_) {
    last_error_end_ = span.end;
    return;
  }
  last_error_end_ = span.end;
  last_error_kind_ = kind;
  if (++error_count_ > kMaxErrors) return;
  diags_.Report(kind, span, std::move(message));
}

bool Lexer::PrevEndsOperand() const {
  switch (prev_) {
    case TokenKind::Ident:
    case TokenKind::IntLit:
    case TokenKind::FloatLit:
    case TokenKind::StringLit:
    case TokenKind::KwTrue:
    case TokenKind::KwFalse:
    case TokenKind::RParen:
    case TokenKind::RBracket:
    case TokenKind::RBrace:
      return true;
    default:
      return false;
  }
}

Token Lexer::Next() {
  Token token;
  if (!done_) {
    while (!Scan(token)) {
    }
    token.span = {token_, cursor_};
  }
  if (error_count_ >= kMaxErrors) token.kind = TokenKind::End;
  if (token.kind == TokenKind::End) {
    done_ = true;
    token = Token();
    token.span = {limit_, limit_};
  }
  prev_ = token.kind;
  return token;
}

// See Note [Tuple indices] in docs/internals/syntax.md: after `.`, digits
// are always a plain integer, so `t.0.1` is t . 0 . 1 and never t . 0.1.
void Lexer::LexNumber(Token& token, bool is_float) {
  if (prev_ == TokenKind::Dot) {
    cursor_ = token_;
    while (cursor_ < limit_ && IsDigit(*cursor_)) ++cursor_;
    is_float = false;
  }
  llvm::StringRef text(token_, cursor_ - token_);
  size_t i = 0;
  std::string digits;
  auto take_digits = [&] {
    while (i < text.size() && (IsDigit(text[i]) || text[i] == '_')) {
      if (text[i] != '_') digits += text[i];
      ++i;
    }
  };
  take_digits();
  if (is_float) {
    if (i < text.size() && text[i] == '.') {
      digits += text[i++];
      take_digits();
    }
    if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
      size_t j = i + 1;
      if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
      if (j < text.size() && IsDigit(text[j])) {
        digits.append(text.data() + i, j - i);
        i = j;
        take_digits();
      }
    }
  }
  llvm::StringRef suffix = text.substr(i);
  Span suffix_span{token_ + i, cursor_};
  if (suffix == "f32") {
    token.suffix = ast::LitSuffix::F32;
  } else if (suffix == "f64") {
    token.suffix = ast::LitSuffix::F64;
  } else if (suffix == "i32" || suffix == "i64") {
    if (is_float) {
      Error(DiagKind::InvalidSuffix, suffix_span,
            "a float literal cannot have the integer suffix '" +
                suffix.str() + "'; use f32 or f64");
    } else {
      token.suffix =
          suffix == "i32" ? ast::LitSuffix::I32 : ast::LitSuffix::I64;
    }
  } else if (!suffix.empty()) {
    Error(DiagKind::InvalidSuffix, suffix_span,
          "invalid suffix '" + suffix.str() +
              "' on a number; expected f32, f64, i32 or i64");
  }
  if (is_float) {
    token.kind = TokenKind::FloatLit;
    token.text = std::move(digits);
    return;
  }
  token.kind = TokenKind::IntLit;
  uint64_t value = 0;
  for (char c : digits) {
    uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) {
      Error(DiagKind::InvalidNumber, {token_, token_ + i},
            "integer literal does not fit in 64 bits");
      value = 0;
      break;
    }
    value = value * 10 + digit;
  }
  token.int_value = value;
}

bool Lexer::Scan(Token& token) {
  token_ = cursor_;
  /*!re2c
    $ { token.kind = TokenKind::End; return true; }
    [ \t\r\n]+ { return false; }
    "//" { SkipLineComment(); return false; }
    "/*" { SkipBlockComment(); return false; }

    "fn" { token.kind = TokenKind::KwFn; return true; }
    "export" { token.kind = TokenKind::KwExport; return true; }
    "struct" { token.kind = TokenKind::KwStruct; return true; }
    "dim" { token.kind = TokenKind::KwDim; return true; }
    "let" { token.kind = TokenKind::KwLet; return true; }
    "loop" { token.kind = TokenKind::KwLoop; return true; }
    "for" { token.kind = TokenKind::KwFor; return true; }
    "in" { token.kind = TokenKind::KwIn; return true; }
    "while" { token.kind = TokenKind::KwWhile; return true; }
    "if" { token.kind = TokenKind::KwIf; return true; }
    "else" { token.kind = TokenKind::KwElse; return true; }
    "import" { token.kind = TokenKind::KwImport; return true; }
    "as" { token.kind = TokenKind::KwAs; return true; }
    "true" { token.kind = TokenKind::KwTrue; return true; }
    "false" { token.kind = TokenKind::KwFalse; return true; }
    ident { token.kind = TokenKind::Ident; return true; }

    // Ties go to the earlier rule: a dangling exponent (`1e`, `2.5E+`)
    // beats "number with suffix e", and a float beats "int with suffix".
    dec ("." dec)? [eE] [+-]? {
      if (prev_ == TokenKind::Dot) {
        LexNumber(token, false);
        return true;
      }
      Error(DiagKind::InvalidNumber, {token_, cursor_},
            "the exponent of this float literal has no digits");
      token.kind = TokenKind::FloatLit;
      token.text = "0";
      return true;
    }
    dec "." dec exp? ident? | dec exp ident? {
      LexNumber(token, true);
      return true;
    }
    "." dec exp? ident? {
      // `t.0`, `x).1`: a dot after an operand is member access.
      if (PrevEndsOperand() || prev_ == TokenKind::Dot) {
        cursor_ = token_ + 1;
        token.kind = TokenKind::Dot;
        return true;
      }
      LexNumber(token, true);
      return true;
    }
    dec ident? { LexNumber(token, false); return true; }

    ["] { LexString(token); return true; }

    "+" { token.kind = TokenKind::Plus; return true; }
    "->" { token.kind = TokenKind::Arrow; return true; }
    "-" { token.kind = TokenKind::Minus; return true; }
    "*" { token.kind = TokenKind::Star; return true; }
    "/" { token.kind = TokenKind::Slash; return true; }
    "%" { token.kind = TokenKind::Percent; return true; }
    "^" { token.kind = TokenKind::Caret; return true; }
    "==" { token.kind = TokenKind::EqEq; return true; }
    "!=" { token.kind = TokenKind::NotEq; return true; }
    "<=" { token.kind = TokenKind::LessEq; return true; }
    "<" { token.kind = TokenKind::Less; return true; }
    ">=" { token.kind = TokenKind::GreaterEq; return true; }
    ">" { token.kind = TokenKind::Greater; return true; }
    "&&" { token.kind = TokenKind::AndAnd; return true; }
    "||" { token.kind = TokenKind::OrOr; return true; }
    "!" { token.kind = TokenKind::Bang; return true; }
    "=" { token.kind = TokenKind::Eq; return true; }
    ":" { token.kind = TokenKind::Colon; return true; }
    "," { token.kind = TokenKind::Comma; return true; }
    ".." { token.kind = TokenKind::DotDot; return true; }
    "." { token.kind = TokenKind::Dot; return true; }
    ";" { token.kind = TokenKind::Semi; return true; }
    "(" { token.kind = TokenKind::LParen; return true; }
    ")" { token.kind = TokenKind::RParen; return true; }
    "[" { token.kind = TokenKind::LBracket; return true; }
    "]" { token.kind = TokenKind::RBracket; return true; }
    "{" { token.kind = TokenKind::LBrace; return true; }
    "}" { token.kind = TokenKind::RBrace; return true; }
    "@" { token.kind = TokenKind::At; return true; }
    "|" { token.kind = TokenKind::Pipe; return true; }

    "&" {
      // Read as the `&&` it almost certainly means, to avoid a cascade.
      Error(DiagKind::InvalidCharacter, {token_, cursor_},
            "unexpected character '&'; did you mean '&&'?");
      token.kind = TokenKind::AndAnd;
      return true;
    }
    utf8_multi {
      Error(DiagKind::InvalidCharacter, {token_, cursor_},
            "non-ASCII character '" + std::string(token_, cursor_) +
                "' is allowed only in comments and strings");
      return false;
    }
    control {
      Error(DiagKind::InvalidCharacter, {token_, cursor_},
            "control character " + Hex(static_cast<unsigned char>(*token_)) +
                " in source");
      return false;
    }
    [\x80-\xff] {
      Error(DiagKind::InvalidUtf8, {token_, cursor_},
            "invalid UTF-8 byte " + Hex(static_cast<unsigned char>(*token_)));
      return false;
    }
    * {
      Error(DiagKind::InvalidCharacter, {token_, cursor_},
            "unexpected character '" + std::string(token_, cursor_) + "'");
      return false;
    }
  */
}

void Lexer::SkipLineComment() {
  for (;;) {
    const char* start = cursor_;
    /*!re2c
      "\n" { return; }
      $ { return; }
      [\x00-\x09\x0b-\x7f]+ { continue; }
      utf8_multi { continue; }
      * {
        Error(DiagKind::InvalidUtf8, {start, cursor_},
              "invalid UTF-8 byte " + Hex(static_cast<unsigned char>(*start)) +
                  " in comment");
        continue;
      }
    */
  }
}

// Block comments nest, as in Rust and Swift, so that commenting out code
// that already holds a comment works.
void Lexer::SkipBlockComment() {
  const char* opening = token_;
  size_t depth = 1;
  for (;;) {
    const char* start = cursor_;
    /*!re2c
      "*" "/" {
        if (--depth == 0) return;
        continue;
      }
      "/" "*" { ++depth; continue; }
      $ {
        Error(DiagKind::UnterminatedComment, {opening, opening + 2},
              "unterminated block comment: missing '*" "/'");
        return;
      }
      [^*/\x80-\xff]+ { continue; }
      [*/] { continue; }
      utf8_multi { continue; }
      * {
        Error(DiagKind::InvalidUtf8, {start, cursor_},
              "invalid UTF-8 byte " + Hex(static_cast<unsigned char>(*start)) +
                  " in comment");
        continue;
      }
    */
  }
}

void Lexer::LexString(Token& token) {
  token.kind = TokenKind::StringLit;
  for (;;) {
    const char* start = cursor_;
    /*!re2c
      ["] { return; }
      "\\n" { token.text += '\n'; continue; }
      "\\t" { token.text += '\t'; continue; }
      "\\\\" { token.text += '\\'; continue; }
      "\\\"" { token.text += '"'; continue; }
      "\\" ([\x20-\x7e] | utf8_multi)? {
        Error(DiagKind::InvalidEscape, {start, cursor_},
              "unknown escape sequence '" + std::string(start, cursor_) +
                  "'; use \\n, \\t, \\\\ or \\\"");
        continue;
      }
      "\n" | "\r\n" {
        cursor_ = start;
        Error(DiagKind::UnterminatedString, {token_, start},
              "unterminated string literal: missing closing '\"'");
        return;
      }
      $ {
        cursor_ = start;
        Error(DiagKind::UnterminatedString, {token_, start},
              "unterminated string literal: missing closing '\"'");
        return;
      }
      [\x20-\x21\x23-\x5b\x5d-\x7e\t]+ {
        token.text.append(start, cursor_);
        continue;
      }
      utf8_multi { token.text.append(start, cursor_); continue; }
      control | "\r" {
        Error(DiagKind::InvalidCharacter, {start, cursor_},
              "control character " + Hex(static_cast<unsigned char>(*start)) +
                  " in string literal; use an escape such as \\n");
        continue;
      }
      * {
        Error(DiagKind::InvalidUtf8, {start, cursor_},
              "invalid UTF-8 byte " + Hex(static_cast<unsigned char>(*start)) +
                  " in string literal");
        continue;
      }
    */
  }
}

}  // namespace delta::syntax
