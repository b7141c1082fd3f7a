"""What a run keeps on disk for a fast next start: the instructions' KV snapshot, the vocabulary's
token bytes, and the GGUF header read that replaces a vocab-only model load."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from localagent.backends import prompt_cache
from localagent.backends.decoding import KvSnapshot, LlamaSession
from localagent.backends.gguf_header import GGUFHeaderError, context_length
from localagent.backends.guidance import Guidance
from localagent.backends.llama_runtime import LoadSettings, load_llama
from localagent.backends.local_generator import LocalSettings
from localagent.backends.local_turn import open_local_turn
from localagent.backends.text_turn import TextTurn
from localagent.backends.token_reuse import TokenReuse
from localagent.core.cancel import CancelToken
from localagent.core.messages import Message, SystemMessage, UserMessage
from localagent.core.paths import cache_dir
from localagent.errors import RecoverableTurnError
from localagent.formats.base import Prompt
from localagent.models.registry import ResolvedModel
from localagent.tools import Tool, Workspace, select_tools
from localagent.turn.prompts import first_task


@pytest.fixture
def private_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("LOCALAGENT_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    return select_tools(None, Workspace(tmp_path))


def fresh_turn(model: Path, **settings: object) -> TextTurn:
    local = LocalSettings(**settings)  # type: ignore[arg-type]
    return open_local_turn(ResolvedModel(model, None), LoadSettings(n_ctx=2048), local)


def conversation(task: str) -> list[Message]:
    return [SystemMessage(content="You are a careful assistant."), UserMessage(content=task)]


def ask(turn: TextTurn, tools: list[Tool], task: str) -> str:
    turn(conversation(task), [t.spec for t in tools], "auto", CancelToken())
    return turn.generator.steps[-1].generation.text


def test_a_new_process_loads_the_instructions_instead_of_evaluating_them(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    first = fresh_turn(tiny_model_plain, max_tokens=24)
    reply = ask(first, tools, "What is 2 + 2?")
    snapshots = list((private_home / "prompt-cache").glob("*.kv"))
    assert len(snapshots) == 1
    assert first.generator.steps[0].evaluated_prompt_tokens == first.generator.steps[0].prompt_tokens

    second = fresh_turn(tiny_model_plain, max_tokens=24)
    assert ask(second, tools, "What is 2 + 2?") == reply
    record = second.generator.steps[0]
    prompt = second.format.render(conversation("What is 2 + 2?"), [t.spec for t in tools])
    instructions = TokenReuse(second.generator.session).tokens_for(prompt).shared_ends[-1]
    assert instructions > 100
    assert record.evaluated_prompt_tokens == record.prompt_tokens - instructions


def test_a_new_process_in_the_same_folder_loads_the_listing_and_another_folder_the_instructions(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    specs = [t.spec for t in tools]
    in_folder = first_task("What is 2 + 2?", "garden.md: # Seeds to sow\nbudget.csv: month,amount")
    first = fresh_turn(tiny_model_plain, max_tokens=24)
    reply = ask(first, tools, in_folder)
    assert len(list((private_home / "prompt-cache").glob("*.kv"))) == 2

    second = fresh_turn(tiny_model_plain, max_tokens=24)
    assert ask(second, tools, in_folder) == reply
    instructions, with_listing = (
        TokenReuse(second.generator.session)
        .tokens_for(second.format.render(conversation(in_folder), specs))
        .shared_ends
    )
    assert with_listing - instructions > 10
    record = second.generator.steps[0]
    assert record.evaluated_prompt_tokens == record.prompt_tokens - with_listing

    other_folder = first_task("What is 2 + 2?", "recipes.md: # Soups")
    third = fresh_turn(tiny_model_plain, max_tokens=24)
    ask(third, tools, other_folder)
    record = third.generator.steps[0]
    assert record.evaluated_prompt_tokens == record.prompt_tokens - instructions
    assert len(list((private_home / "prompt-cache").glob("*.kv"))) == 3


def test_a_damaged_snapshot_is_evaluated_again_with_the_same_result(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    reply = ask(fresh_turn(tiny_model_plain, max_tokens=24), tools, "Say hi.")
    (snapshot,) = (private_home / "prompt-cache").glob("*.kv")
    snapshot.write_bytes(snapshot.read_bytes()[:100])
    again = fresh_turn(tiny_model_plain, max_tokens=24)
    assert ask(again, tools, "Say hi.") == reply
    assert again.generator.steps[0].evaluated_prompt_tokens == again.generator.steps[0].prompt_tokens


def test_without_the_disk_cache_nothing_is_written(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    ask(fresh_turn(tiny_model_plain, max_tokens=16, disk_cache=False), tools, "Say hi.")
    assert not private_home.exists() or not any(private_home.rglob("*"))


def test_the_cached_vocabulary_gives_the_same_tokenizer(tiny_model_chat: Path, private_home: Path) -> None:
    session = LlamaSession(load_llama(tiny_model_chat, LoadSettings(n_ctx=512)))
    built = Guidance(session, tiny_model_chat, cache_dir("vocab")).tokenizer
    assert len(list(cache_dir("vocab").glob("*.npz"))) == 1
    loaded = Guidance(session, tiny_model_chat, cache_dir("vocab")).tokenizer
    for text in [
        "Thought: hello\nAction: calculator",
        'Action Input: {"expression": "2 * 3"}',
        "<end_of_turn>",
    ]:
        assert loaded.tokenize_str(text) == built.tokenize_str(text)
    specials = [t for t in range(session.n_vocab) if built.is_special_token(t)]
    assert specials and specials == [t for t in range(session.n_vocab) if loaded.is_special_token(t)]
    assert loaded.decode_bytes(list(range(session.n_vocab))) == built.decode_bytes(
        list(range(session.n_vocab))
    )


def test_the_gguf_header_gives_the_trained_context(tiny_model_plain: Path, tmp_path: Path) -> None:
    assert context_length(tiny_model_plain) == 4096
    not_gguf = tmp_path / "notes.gguf"
    not_gguf.write_text("hello")
    with pytest.raises(GGUFHeaderError, match="not a GGUF file"):
        context_length(not_gguf)
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(tiny_model_plain.read_bytes()[:40])
    with pytest.raises(GGUFHeaderError, match="ends early"):
        context_length(cut)


def test_after_another_conversation_the_instructions_load_again_instead_of_being_evaluated(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    turn = fresh_turn(tiny_model_plain, max_tokens=8)
    for offered in (tools, [], tools):  # no tools: other instructions, another prefix in the KV cache
        with contextlib.suppress(RecoverableTurnError):  # random weights: a reply may be cut off
            ask(turn, offered, "Say hi.")
    prompt = turn.format.render(conversation("Say hi."), [t.spec for t in tools])
    instructions = TokenReuse(turn.generator.session).tokens_for(prompt).shared_ends[-1]
    record = turn.generator.steps[-1]
    assert instructions > 100
    assert record.evaluated_prompt_tokens == record.prompt_tokens - instructions


def test_snapshots_past_the_size_limit_go_least_recently_used_first(
    tiny_model_plain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(prompt_cache, "_KEPT_BYTES", 2500)
    session = LlamaSession(load_llama(tiny_model_plain, LoadSettings(n_ctx=512)))
    cache = prompt_cache.PromptCache(tmp_path / "kv", tiny_model_plain)
    first, second, third = (KvSnapshot((1, start), bytes(1000)) for start in (10, 20, 30))
    # File times move in clock ticks of up to 10 ms; each step waits one out to be ordered.
    cache.write(session, first)
    time.sleep(0.05)
    cache.write(session, second)
    time.sleep(0.05)
    assert cache.read(session, first.tokens) is not None  # reading makes it the most recently used
    time.sleep(0.05)
    cache.write(session, third)
    assert cache.read(session, second.tokens) is None
    assert cache.read(session, first.tokens) == first
    assert cache.read(session, third.tokens) == third


def test_a_later_step_keeps_the_starts_in_memory_for_the_next_conversation(
    tiny_model_plain: Path, tools: list[Tool], private_home: Path
) -> None:
    turn = fresh_turn(tiny_model_plain, max_tokens=8, disk_cache=False)
    generator, specs = turn.generator, [t.spec for t in tools]
    listing = "garden.md: # Seeds to sow\nbudget.csv: month,amount"

    def step(prompt: Prompt) -> str:
        return generator.generate(prompt, None, CancelToken(), lambda text: None).text

    first = turn.format.render(conversation(first_task("Say hi.", listing)), specs)
    reply = step(first)
    step(Prompt(first.text + reply + "\nObservation: hi\n", first.special, first.shared_starts))
    assert generator.steps[-1].evaluated_prompt_tokens < 20  # the step went on from the KV cache

    another = turn.format.render(conversation(first_task("Say bye.", listing)), specs)
    step(another)
    with_listing = TokenReuse(generator.session).tokens_for(another).shared_ends[-1]
    record = generator.steps[-1]
    assert record.evaluated_prompt_tokens == record.prompt_tokens - with_listing
