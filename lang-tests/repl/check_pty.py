#!/usr/bin/python3
"""Drives `dlc` (no arguments) and `dlc repl` through a pseudo-terminal:
prompts are shown, line editing (libedit) reads the input, values print, a
typo is reported and the session goes on, Ctrl-C drops a half-typed line
and stops a running evaluation without ending the session, Up recalls a
multi-line entry whole, Tab completes a name, and the history is saved to
~/.delta_history.
Usage: check_pty.py PATH/TO/dlc"""
import os
import pty
import select
import sys
import tempfile
import time


def run_session(argv, lines, home):
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["HOME"] = home
        os.environ["TERM"] = "dumb"
        # Under ASan, libedit's own lifetime allocations are not our leaks.
        suppressions = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "lsan.supp")
        lsan = os.environ.get("LSAN_OPTIONS", "")
        os.environ["LSAN_OPTIONS"] = (lsan + ":" if lsan else "") + \
            "suppressions=" + suppressions
        os.execv(argv[0], argv)
    output = b""

    def read_until(needle, timeout=30, start=0):
        nonlocal output
        deadline = time.time() + timeout
        while needle not in output[start:] and time.time() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.2)
            if ready:
                try:
                    output += os.read(fd, 4096)
                except OSError:
                    break
        return needle in output[start:]

    ok = read_until(b"delta> ")
    for line in lines:
        if isinstance(line, tuple) and line[0] == "keys":
            # Keys as they are (Up is ESC [ A), then Enter; libedit redraws
            # the prompt as it edits, so wait for the value, then a prompt.
            _, keys, value = line
            start = len(output)
            os.write(fd, keys.encode() + b"\r")
            ok &= read_until(value.encode(), start=start)
            after = output.find(value.encode(), start) + len(value)
            ok &= read_until(b"delta> ", start=max(after, start))
            continue
        if isinstance(line, tuple):
            # Ctrl-C: after typing part of a line, or during an evaluation.
            how, text = line
            start = len(output)
            os.write(fd, text.encode() + (b"\r" if how == "run" else b""))
            time.sleep(1.5 if how == "run" else 0.3)
            os.write(fd, b"\x03")
            ok &= read_until(b"delta> ", start=start + len(text))
            continue
        os.write(fd, line.encode() + b"\r")
        expected = b"... " if line.count("(") > line.count(")") else b"delta> "
        ok &= read_until(expected, start=len(output))
    os.write(fd, b":quit\r")
    read_until(b"\xff", timeout=3)
    _, status = os.waitpid(pid, 0)
    return ok, output.decode(errors="replace"), status


def main():
    dlc = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory() as home:
        for argv in ([dlc], [dlc, "repl"]):
            ok, output, status = run_session(
                argv,
                ["dim feat = 3;", "let w = for j in feat { 0.5 };",
                 "sum(w,", "feat)", ("keys", "\x1b[A", "1.5 : f32"),
                 "squar(w)", "w * 2.0",
                 ("type", "half a li"), ("type", "sum(w,"),
                 ("run", "loop s = 0 for k in 0..100000000000 "
                         "{ (s * 31 + k) % 1000003 }"),
                 "w + 1.0", "let weights = for j in feat { 0.25 };",
                 ("keys", "sum(weig\t)", "0.75 : f32")],
                home)
            checks = {
                "prompts shown": ok,
                "banner": "Type :help" in output,
                "continuation prompt": "   ... feat)" in output,
                "sum printed": "1.5 : f32" in output,
                # Up recalled `sum(w,\nfeat)` whole, not just `feat)`.
                "multi-line entry recalled": output.count("1.5 : f32") == 2,
                "typo reported": "unknown name `squar`" in output,
                "session went on": "[feat=3] [1, 1, 1] : f32[feat]" in output,
                # Ctrl-C drops a half-typed line or entry and stops a long
                # evaluation; the definitions stay.
                "evaluation interrupted": "interrupted; the session's "
                "definitions are kept" in output,
                "session survived Ctrl-C":
                "[feat=3] [1.5, 1.5, 1.5] : f32[feat]" in output,
                "Tab completed a name": "0.75 : f32" in output,
                "exit status 0": os.WIFEXITED(status)
                and os.WEXITSTATUS(status) == 0,
            }
            for name, passed in checks.items():
                if not passed:
                    failures.append(f"{' '.join(argv)}: {name}")
            if failures:
                print(output)
        history = os.path.join(home, ".delta_history")
        if not os.path.exists(history) or "feat" not in open(
                history, errors="replace").read():
            failures.append("history not saved in ~/.delta_history")
        # libedit writes an entry's newline as an escape: one line each.
        elif not any("sum(w," in line and "feat)" in line
                     for line in open(history, errors="replace")):
            failures.append("the multi-line entry is not one history entry")
    for failure in failures:
        print("FAIL:", failure)
    if not failures:
        print("pty sessions: all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
