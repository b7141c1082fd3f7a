"""run_python: a short Python snippet that reads the workspace's files and prints what it computes.

A coder model writes `sum(float(r["amount"]) for r in csv.DictReader(open("jobs.csv")))` more
reliably than it adds fifty numbers itself or squeezes them into the calculator. The snippet runs in
a child process (python_child.py) with the workspace as its working directory, a bare environment,
no site-packages, a time limit, resource limits and an audit hook that refuses writes, deletions,
sockets, new processes, ctypes and reads outside the workspace; see README for what that does not
guard against.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from importlib import resources
from typing import Annotated

from pydantic import Field

from localagent.core.cancel import CancelToken
from localagent.tools.base import Tool, ToolError
from localagent.tools.walk import workspace_paths
from localagent.tools.workspace import Workspace

SECONDS = 10.0
OUTPUT_CHARS = 4000
MEMORY_BYTES = 1 << 30
CODE_CHARS = 4000
_REFUSED_EXIT = 3
_MISSING_FILE_EXIT = 4  # python_child.py's, with the suffix of the file on stderr's last line
_MISSING_SUFFIX_LINE = "missing file suffix: "
_FILES_WALKED = 5000  # files looked at for the hint under a FileNotFoundError
_FILES_NAMED = 12


class PythonRunner:
    """The run_python tool of one workspace."""

    def __init__(self, workspace: Workspace) -> None:
        self.workspace = workspace

    def tool(self) -> Tool:
        return Tool.from_function(self.run_python)

    def run_python(
        self,
        code: Annotated[
            str,
            Field(
                description="Python statements; print() what you need, or end with an expression to see "
                "its value. Files are opened by their path in the workspace, e.g. open('data/x.csv').",
                max_length=CODE_CHARS,
            ),
        ],
        cancel: CancelToken | None = None,
    ) -> str:
        """Run a short Python snippet (standard library only: csv, json, statistics, re, datetime...)
        with the workspace as the current folder, to compute over its files. It can read files but not
        change them, use the network or start programs, and stops after 10 seconds."""
        child = resources.files("localagent.tools").joinpath("python_child.py")
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", str(child), str(self.workspace.root)],
                cwd=self.workspace.root,
                env={"LANG": "C.UTF-8", "PYTHONIOENCODING": "utf-8"},
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                preexec_fn=_limits,
                start_new_session=True,
            )
        except OSError as error:
            raise ToolError(f"cannot start Python: {error.strerror}") from None
        stdout, stderr, timed_out = _communicate(process, code, cancel)
        output = _shortened(stdout.decode("utf-8", errors="replace"))
        problem = stderr.decode("utf-8", errors="replace").strip().splitlines()
        if timed_out:
            stopped = f"the code ran for more than {SECONDS:g} seconds and was stopped."
            raise ToolError(stopped + _so_far(output))
        if process.returncode == _REFUSED_EXIT:
            raise ToolError(f"{problem[-1] if problem else 'refused'}. Nothing was changed.")
        if process.returncode != 0:
            raise ToolError(
                f"the code failed: {self._failure(process.returncode, problem)}.{_so_far(output)}"
            )
        return output if output.strip() else "(the code printed nothing; print() the result)"

    def _failure(self, status: int, problem: list[str]) -> str:
        """Why the snippet failed, in one line; a file it could not find gets the files of its kind."""
        if status == _MISSING_FILE_EXIT and len(problem) > 1 and problem[-1].startswith(_MISSING_SUFFIX_LINE):
            return problem[-2] + self._files_like(problem[-1].removeprefix(_MISSING_SUFFIX_LINE))
        return problem[-1] if problem else f"exit status {status}"

    def _files_like(self, suffix: str) -> str:
        """The workspace's files of a missing file's kind, so a wrong or made-up name gets the real ones."""
        _, found = workspace_paths(self.workspace, _FILES_WALKED)
        alike = [path for path in found if suffix and path.lower().endswith(suffix)]
        listed, kind = (alike, f"{suffix} files") if alike else (found, "files")
        if not listed:
            return ""
        more = f" and {len(listed) - _FILES_NAMED} more" if len(listed) > _FILES_NAMED else ""
        return f". The workspace's {kind}: {', '.join(listed[:_FILES_NAMED])}{more}"


def _communicate(
    process: subprocess.Popen[bytes], code: str, cancel: CancelToken | None
) -> tuple[bytes, bytes, bool]:
    """The child's output, killing it at the time limit or when the run is cancelled."""
    deadline = SECONDS
    payload: bytes | None = code.encode("utf-8")
    while True:
        try:
            stdout, stderr = process.communicate(payload, timeout=0.25)
            return stdout, stderr, False
        except subprocess.TimeoutExpired:
            payload = None
            deadline -= 0.25
            if deadline <= 0 or (cancel is not None and cancel.cancelled):
                _kill(process)
                stdout, stderr = process.communicate()
                return stdout, stderr, deadline <= 0


def _kill(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _limits() -> None:
    """In the child, before Python starts: no file may grow, memory and CPU are bounded."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    cpu = int(SECONDS) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _shortened(text: str) -> str:
    if len(text) <= OUTPUT_CHARS:
        return text.rstrip("\n")
    return f"{text[:OUTPUT_CHARS]}\n[output cut at {OUTPUT_CHARS} characters; print less]"


def _so_far(output: str) -> str:
    return f" It printed before that:\n{output}" if output.strip() else ""
