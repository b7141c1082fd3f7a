"""A new conversation on a local model starts from its instructions alone, evaluated as from an empty
KV cache, so its replies do not depend on what the cache or the disk snapshot held before.

llama.cpp's numbers depend on how a prompt was split into batches; a conversation that reused the
last one's tokens, or a snapshot evaluated after another conversation, could answer otherwise.
Checked on the real embedded model by comparing the KV cache's bytes, not only the reply's text.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import llama_cpp
import pytest

from localagent.backends.decoding import LlamaSession
from localagent.backends.llama_runtime import load_llama
from localagent.backends.local_generator import LocalSettings, StepRecord
from localagent.backends.local_turn import open_local_turn
from localagent.core.cancel import CancelToken
from localagent.core.messages import Message, SystemMessage, UserMessage
from localagent.models.registry import ResolvedModel
from localagent.tools import Tool
from localagent.turn.prompts import first_task

pytestmark = pytest.mark.slow

QUESTION = "What is in notes.txt?"
# Shares the instructions and the question's first words with QUESTION, then goes another way.
SIMILAR = "What is in notes.txt, line by line?"
SYSTEM = "You are a careful assistant."


def conversation(question: str, system: str = SYSTEM) -> list[Message]:
    return [SystemMessage(content=system), UserMessage(content=question)]


def kv_bytes(session: LlamaSession) -> bytes:
    size = llama_cpp.llama_state_seq_get_size(session.llama.ctx, 0)
    buffer = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(session.llama.ctx, buffer, size, 0)
    return bytes(buffer)[:written]


class Replies:
    """Turns on one loaded model, as a run of the task suite makes them."""

    def __init__(self, model: ResolvedModel, tools: list[Tool], disk_cache: bool) -> None:
        self.model, self.specs = model, [tool.spec for tool in tools]
        self.session = LlamaSession(load_llama(model.path))
        self.settings = LocalSettings(max_tokens=48, disk_cache=disk_cache)
        self.steps: list[StepRecord] = []

    def first_reply(self, question: str, system: str = SYSTEM) -> tuple[str, bytes]:
        turn = open_local_turn(self.model, settings=self.settings, session=self.session)
        self.steps = turn.generator.steps
        result = turn(conversation(question, system), self.specs, "auto", CancelToken())
        return result.model_dump_json(exclude={"usage": True, "requests": {"__all__": {"id"}}}), kv_bytes(
            self.session
        )


def test_a_conversation_after_others_replies_as_one_on_a_fresh_model(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    alone = Replies(embedded_model, default_tools, disk_cache=False).first_reply(QUESTION)

    after_others = Replies(embedded_model, default_tools, disk_cache=False)
    after_others.first_reply(SIMILAR)
    assert after_others.first_reply(QUESTION) == alone
    after_others.first_reply(QUESTION, system="Answer in French.")
    assert after_others.first_reply(QUESTION) == alone


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path))
    return tmp_path


def test_a_snapshot_saved_after_another_conversation_holds_what_a_fresh_model_computes(
    embedded_model: ResolvedModel, default_tools: list[Tool], private_home: Path
) -> None:
    snapshots = private_home / "prompt-cache"
    alone = Replies(embedded_model, default_tools, disk_cache=False).first_reply(QUESTION)

    saving = Replies(embedded_model, default_tools, disk_cache=True)
    saving.first_reply(SIMILAR, system="Answer in French.")
    assert saving.first_reply(QUESTION) == alone
    assert len(list(snapshots.glob("*.kv"))) == 2

    loading = Replies(embedded_model, default_tools, disk_cache=True)
    loading.first_reply(SIMILAR, system="Answer in French.")
    assert loading.first_reply(QUESTION) == alone
    [step] = loading.steps
    assert step.evaluated_prompt_tokens < step.prompt_tokens / 2  # the instructions came from disk


@pytest.mark.usefixtures("private_home")
def test_a_task_in_a_folder_replies_the_same_whether_its_listing_was_evaluated_kept_or_loaded(
    embedded_model: ResolvedModel, default_tools: list[Tool]
) -> None:
    listing = "sowing.md: # When to sow\nnotes.txt: Plant the tulips in October"
    in_folder = first_task(QUESTION, listing)
    alone = Replies(embedded_model, default_tools, disk_cache=False).first_reply(in_folder)

    kept = Replies(embedded_model, default_tools, disk_cache=False)
    kept.first_reply(first_task(SIMILAR, listing))
    assert kept.first_reply(in_folder) == alone
    kept.first_reply(first_task(QUESTION, "rota.md: # Who waters the plants"))
    assert kept.first_reply(in_folder) == alone

    Replies(embedded_model, default_tools, disk_cache=True).first_reply(first_task(SIMILAR, listing))
    loading = Replies(embedded_model, default_tools, disk_cache=True)
    assert loading.first_reply(in_folder) == alone
    [step] = loading.steps
    assert step.prompt_tokens - step.evaluated_prompt_tokens > len(listing) // 8  # the listing came from disk
