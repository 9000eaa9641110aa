" Vim syntax file for Delta (.dl), the differentiable array language.
if exists("b:current_syntax")
  finish
endif

syn keyword deltaKeyword fn export struct dim let import as
syn keyword deltaControl loop for in while if else
syn keyword deltaBoolean true false
syn keyword deltaType f32 f64 i32 i64 bool
syn keyword deltaBuiltin exp expm1 log log1p sin cos tan tanh sqrt abs floor ceil sigmoid relu erf erfc lgamma sign round pow atan2 where isnan clamp sum mean prod max min argmax argmin dot cumsum reduce rename broadcast size print grad value_and_grad jvp vjp vmap stop_gradient checkpoint
syn keyword deltaBuiltin read_npy write_npy

syn match deltaFunction "\<fn\s\+\zs\h\w*"
syn match deltaDim "\<dim\s\+\zs\h\w*"
syn match deltaStructName "\<struct\s\+\zs\h\w*"
syn match deltaAttribute "@\h\w*"
syn match deltaNumber "\<\d[0-9_]*\(\(f\|i\)\(32\|64\)\)\=\>"
syn match deltaFloat "\<\d[0-9_]*\.\d[0-9_]*\([eE][+-]\=\d\+\)\=\(f32\|f64\)\="
syn match deltaFloat "\<\d[0-9_]*[eE][+-]\=\d\+\(f32\|f64\)\="
syn match deltaOperator "->\|\.\.\|==\|!=\|<=\|>=\|&&\|||\|[-+*/%^<>!=|]"

syn match deltaEscape contained "\\[nt\\\"]"
syn region deltaString start=+"+ skip=+\\\\\|\\"+ end=+"+ contains=deltaEscape
syn keyword deltaTodo contained TODO FIXME XXX NOTE
syn match deltaLineComment "//.*$" contains=deltaTodo,@Spell
syn region deltaBlockComment start="/\*" end="\*/" contains=deltaBlockComment,deltaTodo,@Spell

hi def link deltaKeyword Keyword
hi def link deltaControl Conditional
hi def link deltaBoolean Boolean
hi def link deltaType Type
hi def link deltaBuiltin Function
hi def link deltaFunction Function
hi def link deltaDim Identifier
hi def link deltaStructName Structure
hi def link deltaAttribute PreProc
hi def link deltaNumber Number
hi def link deltaFloat Float
hi def link deltaOperator Operator
hi def link deltaString String
hi def link deltaEscape SpecialChar
hi def link deltaLineComment Comment
hi def link deltaBlockComment Comment
hi def link deltaTodo Todo

let b:current_syntax = "delta"
