"""The child process of run_python: runs one snippet read from stdin under an audit hook.

Started as `python -I -S python_child.py ROOT` with ROOT as its working directory and a bare
environment, so it imports nothing but the standard library and none of this package. Before the
snippet runs, an audit hook (PEP 578) refuses every event that would write or delete a file, open a
socket, start a process, load native code through ctypes, or read a path outside ROOT and the
standard library. A refusal ends the snippet with one line on stderr and exit status 3.

Audit hooks are not a security boundary against a determined attacker (CPython's own documentation
says so); with the resource limits the parent sets, they stop the mistakes and the ordinary escapes
of model-written code. This file must stay self-contained: it runs without site-packages.
"""

import ast
import os
import pathlib
import re
import sys

REFUSED_EXIT = 3
# A file the snippet opened is not there: the last line on stderr names its suffix, so that the parent
# can name the workspace's files of that kind, found by the walk its other tools use.
MISSING_FILE_EXIT = 4
MISSING_SUFFIX_LINE = "missing file suffix: "
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_CHANGES = {
    "os.remove": "deleting files",
    "os.rmdir": "deleting folders",
    "os.rename": "renaming files",
    "os.mkdir": "creating folders",
    "os.chmod": "changing permissions",
    "os.chown": "changing owners",
    "os.link": "creating links",
    "os.symlink": "creating links",
    "os.truncate": "changing files",
    "os.utime": "changing file times",
    "shutil.rmtree": "deleting folders",
    "shutil.copyfile": "copying files",
    "shutil.copytree": "copying files",
    "shutil.move": "moving files",
    "os.putenv": "changing the environment",
    "os.unsetenv": "changing the environment",
}
_PROCESSES = ("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "pty.spawn")
_PROCESS_EVENTS = {"os.fork", "os.forkpty", "os.kill", "os.killpg", "signal.pthread_kill"}
_NATIVE = ("ctypes.", "cffi.")
_NATIVE_MODULES = {"ctypes", "_ctypes", "cffi", "_cffi_backend", "mmap"}
_READ_EVENTS = {"os.listdir", "os.scandir", "glob.glob", "os.chdir"}
_BLOCK_AFTER_SEMICOLON = re.compile(r";\s*(?:for|while|with|if|def|class|try)\b")


class Refused(Exception):
    """What the snippet may not do; raised inside it by the audit hook."""


def main() -> None:
    root = os.path.realpath(sys.argv[1])
    code = sys.stdin.read()
    readable = [root, *{os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}]
    readable.append("/usr/share/zoneinfo")
    try:
        program = _compiled(code)
    except SyntaxError as error:
        hint = _block_hint(code, error.lineno)
        print(f"SyntaxError: {error.msg} (line {error.lineno}){hint}", file=sys.stderr)
        sys.exit(1)
    sys.addaudithook(_hook(root, readable))
    namespace = {"__name__": "__main__"}
    try:
        for part, is_last_expression in program:
            if is_last_expression:
                value = eval(part, namespace)
                if value is not None:
                    print(repr(value))
            else:
                exec(part, namespace)
    except Refused as refusal:
        print(f"refused: {refusal}", file=sys.stderr)
        sys.exit(REFUSED_EXIT)
    except Exception as error:  # noqa: BLE001 - any error of the snippet is its output
        print(f"{type(error).__name__}: {error}{_snippet_line(error)}", file=sys.stderr)
        if isinstance(error, FileNotFoundError):
            print(MISSING_SUFFIX_LINE + _suffix(error.filename), file=sys.stderr)
            sys.exit(MISSING_FILE_EXIT)
        sys.exit(1)


def _compiled(code: str) -> list:
    """The snippet as code objects; a last bare expression is evaluated and shown, as a REPL does."""
    tree = ast.parse(code, "<snippet>")
    parts = []
    body = tree.body
    if body and isinstance(body[-1], ast.Expr):
        if body[:-1]:
            parts.append((compile(ast.Module(body[:-1], []), "<snippet>", "exec"), False))
        parts.append((compile(ast.Expression(body[-1].value), "<snippet>", "eval"), True))
    else:
        parts.append((compile(tree, "<snippet>", "exec"), False))
    return parts


def _block_hint(code: str, number: int | None) -> str:
    """A model writing all of its code on one line puts a for or with block after a ';'."""
    lines = code.splitlines()
    if number is None or not 0 < number <= len(lines) or not _BLOCK_AFTER_SEMICOLON.search(lines[number - 1]):
        return ""
    return (
        ". A for, with or if block cannot follow ';' on the same line: start it on a new line "
        "(\\n in the code) and indent its body"
    )


def _suffix(missing: object) -> str:
    """The missing file's suffix (".csv"), or "" for none or one that is no plain word."""
    suffix = pathlib.PurePath(os.fsdecode(missing)).suffix.lower() if isinstance(missing, str | bytes) else ""
    return suffix if suffix[1:].isalnum() else ""


def _snippet_line(error: BaseException) -> str:
    trace = error.__traceback__
    line = None
    while trace is not None:
        if trace.tb_frame.f_code.co_filename == "<snippet>":
            line = trace.tb_lineno
        trace = trace.tb_next
    return f" (line {line})" if line else ""


def _hook(root: str, readable: list):
    def inside(path, roots) -> bool:
        if isinstance(path, int):
            return path in (0, 1, 2)
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            writes = (mode is not None and any(c in str(mode) for c in "wax+")) or bool(
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writes:
                raise Refused(f"writing files is not allowed ({_shown(path)})")
            if path is not None and not inside(path, readable):
                raise Refused(f"reading outside the workspace is not allowed ({_shown(path)})")
        elif event in _CHANGES:
            raise Refused(f"{_CHANGES[event]} is not allowed")
        elif event.startswith("socket."):
            raise Refused("network access is not allowed")
        elif event.startswith(_PROCESSES) or event in _PROCESS_EVENTS:
            raise Refused("starting or signalling processes is not allowed")
        elif event.startswith(_NATIVE):
            raise Refused("loading native code (ctypes) is not allowed")
        elif event == "import" and args[0] == "_posixsubprocess":
            raise Refused("starting processes is not allowed (subprocess)")
        elif event == "import" and str(args[0]).split(".")[0] in _NATIVE_MODULES:
            raise Refused(f"importing {args[0]} is not allowed")
        elif event in _READ_EVENTS and args and args[0] is not None and not inside(args[0], readable):
            raise Refused(f"looking outside the workspace is not allowed ({_shown(args[0])})")
        elif event == "sys.addaudithook" or event.startswith("sys.setprofile") or event == "sys.settrace":
            raise Refused("changing the interpreter's hooks is not allowed")

    return hook


def _shown(path) -> str:
    return repr(os.fsdecode(path)) if isinstance(path, str | bytes) else repr(path)


if __name__ == "__main__":
    main()
