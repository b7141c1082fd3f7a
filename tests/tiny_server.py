"""`localagent serve`'s app on a tiny random-weight GGUF, in-process through starlette's TestClient;
and the tools the serve tests send, as OpenAI clients write them.

The engine is the real one (llama.cpp decoding under llguidance grammars); the weights are noise,
so tests check what the server guarantees whatever the model writes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import llama_cpp
from starlette.testclient import TestClient

from localagent.backends.decoding import Sampling
from localagent.backends.llama_runtime import LoadSettings
from localagent.backends.local_generator import LocalSettings
from localagent.backends.local_turn import ToolFormat, open_local_turn
from localagent.models.registry import ResolvedModel
from localagent.serve.app import build_app
from localagent.serve.engine import Engine, ServedModel
from localagent.serve.generation import Generation

TINY = "tiny"
N_CTX = 1024
MAX_TOKENS = 48
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "Calculate an arithmetic expression.",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
READ_FILE = {
    "type": "function",
    "function": {
        "name": "read_file",
        "description": "Read a text file.",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "start_line": {"type": "integer", "minimum": 1}},
            "required": ["path"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [CALCULATOR, READ_FILE]


def tiny_engine(model: Path, tool_format: ToolFormat = "react", max_actions: int = 1) -> Engine:
    settings = LocalSettings(max_tokens=MAX_TOKENS, disk_cache=False)
    turn = open_local_turn(
        ResolvedModel(model, None),
        LoadSettings(n_ctx=N_CTX),
        settings,
        tool_format=tool_format,
        max_actions=max_actions,
    )
    # As in test_tiny_model: llama.cpp's spinning batch threads slow a tiny model down on a busy machine.
    llama_cpp.llama_set_n_threads(turn.generator.session.llama.ctx, 1, 1)
    return Engine(turn, ServedModel(TINY))


@contextlib.contextmanager
def tiny_client(engine: Engine, api_key: str | None = None) -> Iterator[TestClient]:
    defaults = Generation(MAX_TOKENS, Sampling(), (), stream=False, include_usage=False)
    with TestClient(build_app(engine, defaults, api_key), raise_server_exceptions=False) as client:
        yield client
