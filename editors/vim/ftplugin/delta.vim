" Vim filetype settings for Delta: two-space indentation, comments, and
" `dlc fmt` / `dlc check` as formatter and compiler.
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1

setlocal expandtab shiftwidth=2 softtabstop=2 tabstop=8
setlocal commentstring=//\ %s
setlocal comments=s1:/*,mb:*,ex:*/,://
setlocal formatoptions-=t formatoptions+=croql
setlocal cindent cinoptions=L0,(s,m1 cinkeys-=0#
setlocal makeprg=dlc\ check\ %
setlocal errorformat=%f:%l:%c:\ %trror:\ %m,%f:%l:%c:\ %tarning:\ %m,%-G%.%#

" :DeltaFormat rewrites the file with `dlc fmt` (the buffer is reloaded).
command! -buffer DeltaFormat write | silent !dlc fmt % | edit!

let b:undo_ftplugin = "setlocal expandtab< shiftwidth< softtabstop< tabstop< commentstring< comments< formatoptions< cindent< cinoptions< cinkeys< makeprg< errorformat<"
      \ . " | delcommand DeltaFormat"
