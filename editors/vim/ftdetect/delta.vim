" .dl files are Delta.
autocmd BufRead,BufNewFile *.dl setfiletype delta
