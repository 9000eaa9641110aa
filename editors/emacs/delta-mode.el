;;; delta-mode.el --- Major mode for Delta, the differentiable array language -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "26.1"))
;; Keywords: languages

;;; Commentary:

;; Highlighting, indentation and comments for Delta (.dl) files, plus
;; `delta-format-buffer' (dlc fmt) and `compile' with `dlc check'.  The
;; language server `dlc lsp' works with eglot (registered below when eglot
;; is loaded) or lsp-mode.

;;; Code:

(defgroup delta nil
  "Delta, the differentiable array language."
  :group 'languages)

(defcustom delta-dlc-program "dlc"
  "The dlc executable."
  :type 'string)

(defcustom delta-indent-offset 2
  "Indentation of Delta blocks."
  :type 'integer)

(defconst delta-keywords
  '("fn" "export" "struct" "dim" "let" "loop" "for" "in" "while" "if" "else"
    "import" "as" "true" "false")
  "Keywords of Delta (language.md, section 1).")

(defconst delta-builtins
  '("exp" "expm1" "log" "log1p" "sin" "cos" "tan" "tanh" "sqrt" "abs" "floor" "ceil" "sigmoid" "relu" "erf" "erfc" "lgamma" "sign" "round" "pow" "atan2" "where" "isnan" "clamp" "sum" "mean" "prod" "max" "min" "argmax" "argmin" "dot" "cumsum" "reduce" "rename" "broadcast" "size" "print" "grad" "value_and_grad" "jvp" "vjp" "vmap" "stop_gradient" "checkpoint" "read_npy" "write_npy")
  "Builtin functions of Delta (compiler/sema/builtins.def).")

(defconst delta-types '("f32" "f64" "i32" "i64" "bool")
  "Scalar types of Delta.")

(defconst delta-font-lock-keywords
  `((,(regexp-opt '("true" "false") 'symbols) . font-lock-constant-face)
    (,(regexp-opt delta-keywords 'symbols) . font-lock-keyword-face)
    (,(regexp-opt delta-types 'symbols) . font-lock-type-face)
    (,(regexp-opt delta-builtins 'symbols) . font-lock-builtin-face)
    ("\\_<fn\\s-+\\([A-Za-z_][A-Za-z0-9_]*\\)" 1 font-lock-function-name-face)
    ("\\_<\\(?:struct\\|dim\\)\\s-+\\([A-Za-z_][A-Za-z0-9_]*\\)" 1 font-lock-type-face)
    ("@[A-Za-z_][A-Za-z0-9_]*" . font-lock-preprocessor-face)
    ("\\_<[0-9][0-9_]*\\(?:\\.[0-9][0-9_]*\\)?\\(?:[eE][+-]?[0-9]+\\)?\\(?:[fi]\\(?:32\\|64\\)\\)?\\_>"
     . font-lock-constant-face))
  "Highlighting of Delta.")

(defvar delta-mode-syntax-table
  (let ((table (make-syntax-table)))
    (modify-syntax-entry ?_ "_" table)
    (modify-syntax-entry ?\" "\"" table)
    (modify-syntax-entry ?\\ "\\" table)
    ;; // line comments and nesting /* */ block comments.
    (modify-syntax-entry ?/ ". 124" table)
    (modify-syntax-entry ?* ". 23bn" table)
    (modify-syntax-entry ?\n ">" table)
    (dolist (c '(?+ ?- ?% ?^ ?< ?> ?= ?! ?& ?|))
      (modify-syntax-entry c "." table))
    table)
  "Syntax table of `delta-mode'.")

(defun delta-indent-line ()
  "Indent the current line by the depth of open brackets."
  (interactive)
  (let* ((depth (save-excursion (car (syntax-ppss (line-beginning-position)))))
         (closing (save-excursion
                    (back-to-indentation)
                    (looking-at-p "[]})]")))
         (column (* delta-indent-offset (max 0 (- depth (if closing 1 0))))))
    (if (<= (current-column) (current-indentation))
        (indent-line-to column)
      (save-excursion (indent-line-to column)))))

(defun delta-format-buffer ()
  "Format the current file with `dlc fmt' and revert the buffer."
  (interactive)
  (save-buffer)
  (if (zerop (call-process delta-dlc-program nil "*dlc fmt*" nil
                           "fmt" (buffer-file-name)))
      (revert-buffer t t t)
    (display-buffer "*dlc fmt*")))

;;;###autoload
(define-derived-mode delta-mode prog-mode "Delta"
  "Major mode for Delta source files."
  :syntax-table delta-mode-syntax-table
  (setq-local font-lock-defaults '(delta-font-lock-keywords))
  (setq-local comment-start "// ")
  (setq-local comment-end "")
  (setq-local comment-start-skip "\\(?://+\\|/\\*+\\)\\s-*")
  (setq-local indent-line-function #'delta-indent-line)
  (setq-local indent-tabs-mode nil)
  (setq-local compile-command
              (concat delta-dlc-program " check "
                      (shell-quote-argument (or buffer-file-name "")))))

;;;###autoload
(add-to-list 'auto-mode-alist '("\\.dl\\'" . delta-mode))

(with-eval-after-load 'eglot
  (add-to-list 'eglot-server-programs
               `(delta-mode . (,delta-dlc-program "lsp"))))

(provide 'delta-mode)
;;; delta-mode.el ends here
