"""The local text turn on tiny random-weight GGUFs (tiny_gguf.py), run by the real llama.cpp engine,
in each reply format: text tags in a plain prompt and in a Gemma-like chat template, and the
tool_call format in Qwen2.5's own template (which lays out the tools) and in SmolLM2's (which does
not, so the format adds its tools block to the system prompt).

Random weights write nonsense, so these tests check what the turn guarantees whatever the model
writes: under the grammar every reply is a valid action or answer, the prompt goes through the
GGUF's chat template when it has one, each step evaluates only the tokens added since the last,
and the context budget holds over a long run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import llama_cpp
import pytest
from turn_runs import assert_well_formed, run_steps

from localagent.backends.decoding import Sampling
from localagent.backends.llama_runtime import LoadSettings
from localagent.backends.local_generator import Decoder, LocalSettings
from localagent.backends.local_turn import ToolFormat, open_local_turn
from localagent.backends.text_turn import TextTurn
from localagent.core.cancel import CancelToken
from localagent.core.messages import (
    Final,
    Message,
    NamedToolChoice,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    ToolRequests,
    UserMessage,
    assistant_message_for,
)
from localagent.errors import BackendError, RecoverableTurnError
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.models.registry import ResolvedModel
from localagent.tools import Tool, Workspace, select_tools
from localagent.turn.prompts import ELIDED_OBSERVATION as ELIDED

SYSTEM = "You are a careful assistant."
TASKS = ("What is 17 * 23?", "What is in notes.txt?", "Who wrote Hamlet?")
CHOICES: tuple[ToolChoice, ...] = (
    "auto",
    "none",
    "required",
    NamedToolChoice(name="calculator"),
    NamedToolChoice(name="read_file"),
)
SAMPLINGS = (Sampling(), Sampling(temperature=0.7, seed=1), Sampling(temperature=1.5, top_p=0.9, seed=2))


@dataclass(frozen=True)
class TinySetup:
    path: Path
    tool_format: ToolFormat


# Each tiny model with its reply format: `auto` gives tool_call where the template lays out tools.
SETUPS: dict[str, tuple[str, ToolFormat]] = {
    "plain": ("plain", "auto"),
    "chat": ("chat", "auto"),
    "qwen": ("qwen", "auto"),
    "smollm": ("smollm", "tool_call"),
}


@pytest.fixture(params=list(SETUPS))
def tiny_model(request: pytest.FixtureRequest) -> TinySetup:
    """Each setup in turn, or the ones a test names with indirect parametrization."""
    model, tool_format = SETUPS[request.param]
    return TinySetup(request.getfixturevalue(f"tiny_model_{model}"), tool_format)


@pytest.fixture
def tools(tmp_path: Path) -> list[Tool]:
    (tmp_path / "notes.txt").write_text("buy milk\ncall Ada at 5\nthe answer is 42\n", encoding="utf-8")
    (tmp_path / "long.txt").write_text(
        "".join(f"line {n}: the answer is not in this line of the file\n" for n in range(1, 7)),
        encoding="utf-8",
    )
    return select_tools(None, Workspace(tmp_path))


def make_turn(setup: TinySetup, settings: LocalSettings, n_ctx: int = 2048) -> TextTurn:
    turn = open_local_turn(
        ResolvedModel(setup.path, None), LoadSettings(n_ctx=n_ctx), settings, tool_format=setup.tool_format
    )
    # load_llama leaves llama.cpp's batch threads at the core count; on a busy machine their spin
    # waits make every multi-token evaluation of this tiny model 10 to 100 times slower.
    llama_cpp.llama_set_n_threads(turn.generator.session.llama.ctx, 1, 1)
    return turn


def start(task: str) -> list[Message]:
    return [SystemMessage(content=SYSTEM), UserMessage(content=task)]


def held_tokens(turn: TextTurn) -> list[int]:
    """What the KV cache holds after a turn: the prompt the model saw, then its reply."""
    llama = turn.generator.session.llama
    return [int(token) for token in llama.input_ids[: llama.n_tokens]]


def held_text(turn: TextTurn) -> str:
    return turn.generator.session.llama.detokenize(held_tokens(turn), special=True).decode(
        "utf-8", errors="replace"
    )


@pytest.mark.parametrize("decoder", ["llguidance", "gbnf"])
def test_every_turn_is_a_valid_action_or_answer_whatever_the_weights(
    tiny_model: TinySetup, tools: list[Tool], decoder: Decoder
) -> None:
    specs = [tool.spec for tool in tools]
    kinds: set[str] = set()
    for sampling in SAMPLINGS:
        turn = make_turn(tiny_model, LocalSettings(max_tokens=128, decoder=decoder, sampling=sampling))
        for task in TASKS:
            for choice in CHOICES:
                result = turn(start(task), specs, choice, CancelToken())
                assert_well_formed(result, tools, choice)
                assert turn.generator.steps[-1].generation.stop == "end"
                kinds.add(type(result).__name__)
        assert {step.decoder for step in turn.generator.steps} == {decoder}
    assert kinds == {"Final", "ToolRequests"}


@pytest.mark.parametrize("decoder", ["llguidance", "gbnf"])
def test_a_tiny_token_limit_gives_a_cut_off_error_never_an_unparsable_reply(
    tiny_model: TinySetup, tools: list[Tool], decoder: Decoder
) -> None:
    specs = [tool.spec for tool in tools]
    cut_off = 0
    for max_tokens in (1, 2, 4, 8, 16):
        turn = make_turn(
            tiny_model,
            LocalSettings(max_tokens=max_tokens, decoder=decoder, sampling=Sampling(0.8, seed=max_tokens)),
        )
        for choice in CHOICES:
            try:
                result = turn(start(TASKS[0]), specs, choice, CancelToken())
            except RecoverableTurnError as error:
                assert error.problem == "cut_off"
                assert f"{max_tokens}-token limit" in error.feedback
                assert turn.generator.steps[-1].generation.stop == "length"
                cut_off += 1
            else:
                assert_well_formed(result, tools, choice)
    assert cut_off >= 3 * len(CHOICES)


@pytest.mark.parametrize("tiny_model", ["plain"], indirect=True)
def test_a_gguf_without_a_chat_template_gets_the_plain_prompt(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    turn = make_turn(tiny_model, LocalSettings(max_tokens=64))
    assert turn.format.template is None
    turn(start("What is 6 * 7?"), [tool.spec for tool in tools], "auto", CancelToken())
    tokens, text = held_tokens(turn), held_text(turn)
    assert tokens[0] == turn.generator.session.llama.token_bos()
    assert text.startswith(f"<bos>{SYSTEM}\n\nAnswer the question, using tools when they help.")
    assert "\n\nQuestion: What is 6 * 7?\nThought: " in text
    assert "<start_of_turn>" not in text


@pytest.mark.parametrize("tiny_model", ["chat"], indirect=True)
def test_a_gguf_with_a_chat_template_gets_its_prompt_through_the_template(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    turn = make_turn(tiny_model, LocalSettings(max_tokens=64))
    assert turn.format.template is not None
    turn(start("What is 6 * 7?"), [tool.spec for tool in tools], "auto", CancelToken())
    tokens, text = held_tokens(turn), held_text(turn)
    # Gemma's way: no system turn; the system prompt and the instructions open the first user turn.
    assert text.startswith(
        f"<bos><start_of_turn>user\n{SYSTEM}\n\nAnswer the question, using tools when they help."
    )
    assert "\n\nWhat is 6 * 7?<end_of_turn>\n<start_of_turn>model\nThought: " in text
    assert "system" not in text.split("\n", 1)[0]
    # The markers went in as the control tokens the model knows, not as their spelling in bytes.
    [bos] = turn.generator.session.tokenize("<bos>", bos=False, special=True)
    [start_of_turn] = turn.generator.session.tokenize("<start_of_turn>", bos=False, special=True)
    [end_of_turn] = turn.generator.session.tokenize("<end_of_turn>", bos=False, special=True)
    assert tokens.count(bos) == 1
    assert tokens.count(start_of_turn) == 2
    assert tokens.count(end_of_turn) == 1


@pytest.mark.parametrize("tiny_model", ["qwen"], indirect=True)
def test_a_gguf_whose_template_lays_out_tools_gets_the_tool_call_format_in_it(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    turn = make_turn(tiny_model, LocalSettings(max_tokens=64))
    assert isinstance(turn.format, ToolCallFormat)
    result = turn(start("What is 6 * 7?"), [tool.spec for tool in tools], "required", CancelToken())
    assert isinstance(result, ToolRequests)
    tokens, text = held_tokens(turn), held_text(turn)
    system, rest = text.split("<|im_end|>\n", 1)
    # Qwen's way: the template writes the tools block into the system turn, each tool once.
    assert system.startswith(f"<|im_start|>system\n{SYSTEM}\n\n# Tools\n\nYou may call one or more functions")
    assert system.count("\n<tools>\n") == 1
    for tool in tools:
        assert system.count(json.dumps(tool.spec.to_openai(), ensure_ascii=False)) == 1
    assert rest.startswith("<|im_start|>user\nWhat is 6 * 7?<|im_end|>\n<|im_start|>assistant\n")
    assert "<tools>" not in rest
    # No BOS (Qwen's GGUF adds none); the markers went in as control tokens.
    session = turn.generator.session
    [im_start] = session.tokenize("<|im_start|>", bos=False, special=True)
    [im_end] = session.tokenize("<|im_end|>", bos=False, special=True)
    assert tokens[0] == im_start
    assert (tokens.count(im_start), tokens.count(im_end)) == (3, 2)
    # Where the grammar forces a tag (no preface may come first), it is fast-forwarded as the
    # vocabulary's single user-defined token, as Qwen2.5 writes it. (Where the model samples it,
    # llguidance also lets it spell the tag in smaller pieces.)
    turn.format = ToolCallFormat(turn.format.template, preface=False)
    result = turn(start("What is 6 * 7?"), [tool.spec for tool in tools], "required", CancelToken())
    assert isinstance(result, ToolRequests)
    [open_tag] = session.tokenize("<tool_call>", bos=False)
    [close_tag] = session.tokenize("</tool_call>", bos=False)
    reply = turn.generator.steps[-1].generation
    assert reply.tokens[0] == open_tag
    assert reply.tokens.count(open_tag) == reply.tokens.count(close_tag) == len(result.requests)
    assert reply.text.startswith("<tool_call>\n{")


@pytest.mark.parametrize("tiny_model", ["qwen", "smollm"], indirect=True)
def test_tool_results_go_back_as_tool_responses_in_a_user_turn(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    """Qwen's template lays them out so itself; for SmolLM2's, which knows no tools, the format
    does the same, and puts the tools block it lacks in the system turn."""
    turn = make_turn(tiny_model, LocalSettings(max_tokens=64))
    choices: list[ToolChoice] = [NamedToolChoice(name="calculator"), "none"]
    results = list(run_steps(turn, tools, choices, start("What is 6 * 7?")))
    assert isinstance(results[0], ToolRequests) and isinstance(results[1], Final)
    text = held_text(turn)
    assert text.startswith(f"<|im_start|>system\n{SYSTEM}\n\n# Tools\n\n")
    assert text.count("<|im_start|>system\n") == 1
    responses = text.split("<|im_start|>user\n")[2].split("<|im_end|>")[0]
    assert responses.startswith("<tool_response>\n") and responses.endswith("\n</tool_response>")
    assert responses.count("<tool_response>") == len(results[0].requests)


@pytest.mark.parametrize("tiny_model", ["chat", "qwen"], indirect=True)
def test_a_chat_model_ends_its_turn_with_its_end_of_turn_marker_under_llguidance(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    """The template's end of turn (Gemma's <end_of_turn>, not its EOS; Qwen's <|im_end|>) is what
    the model writes to stop; the decode loop must allow it wherever the grammar allows EOS."""
    turn = make_turn(tiny_model, LocalSettings(max_tokens=200))
    specs = [tool.spec for tool in tools]
    answer = turn(start("Say hello."), specs, "none", CancelToken())
    assert isinstance(answer, Final)
    action = turn(start("What is 6 * 7?"), specs, NamedToolChoice(name="calculator"), CancelToken())
    assert isinstance(action, ToolRequests)
    assert len(action.requests) == 1
    for step in turn.generator.steps:
        assert step.generation.stop == "end"
        assert step.generation.stats.generated_tokens < 200


@pytest.mark.parametrize("decoder", ["llguidance", "gbnf"])
def test_each_step_evaluates_only_the_tokens_added_since_the_last(
    tiny_model: TinySetup, tools: list[Tool], decoder: Decoder
) -> None:
    turn = make_turn(tiny_model, LocalSettings(max_tokens=96, decoder=decoder))
    choices: list[ToolChoice] = [NamedToolChoice(name="calculator")] * 3 + ["none"]
    results = list(run_steps(turn, tools, choices, start("Compute 2 * 3, then that result times 4.")))
    assert isinstance(results[-1], Final)
    for before, step in zip(turn.generator.steps, turn.generator.steps[1:], strict=False):
        # Nothing of the last prompt is evaluated again.
        assert step.evaluated_prompt_tokens <= step.prompt_tokens - before.prompt_tokens + 1
        if decoder == "llguidance":
            assert step.new_prompt_tokens < step.prompt_tokens / 5
            assert step.evaluated_prompt_tokens == step.new_prompt_tokens
        else:
            # GBNF's reply tokens are not kept: its text is tokenized again as new, and the KV
            # cache may still hold the first of those tokens as the sampler chose them.
            assert 1 <= step.evaluated_prompt_tokens <= step.new_prompt_tokens + 1
    if decoder == "llguidance":
        # The own loop's reply tokens are reused as generated. The plain prompt repeats the reply
        # exactly; Gemma's template trims it, so a text-tag reply's final newline token is
        # re-rendered after it. A tool_call reply ends with its call, which no template trims.
        trimmed = 0 if isinstance(turn.format, ToolCallFormat) or turn.format.template is None else 1
        for before, step in zip(turn.generator.steps, turn.generator.steps[1:], strict=False):
            reply = before.generation.stats.generated_tokens
            assert step.prompt_tokens == before.prompt_tokens + reply - trimmed + step.new_prompt_tokens


def test_a_long_run_elides_old_observations_to_fit_the_context(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    n_ctx, max_tokens = 1024, 64
    turn = make_turn(tiny_model, LocalSettings(max_tokens=max_tokens), n_ctx=n_ctx)
    read_file = next(tool for tool in tools if tool.name == "read_file")
    specs = [read_file.spec]
    messages = start("Read long.txt again and again.")
    elided = []
    for _ in range(6):
        result = turn(messages, specs, NamedToolChoice(name="read_file"), CancelToken())
        elided.append(held_text(turn).count(ELIDED))
        assert isinstance(result, ToolRequests)
        messages.append(assistant_message_for(result))
        # Random weights cannot name the file, so each request gets the long file's real contents.
        content = read_file.run({"path": "long.txt"}, CancelToken())
        messages.extend(ToolMessage(request_id=r.id, name=r.name, content=content) for r in result.requests)
    answer = turn(messages, specs, "none", CancelToken())
    assert isinstance(answer, Final)
    assert all(step.prompt_tokens <= n_ctx - max_tokens for step in turn.generator.steps)
    assert elided == sorted(elided)
    assert elided[0] == 0 and elided[-1] >= 2
    text = held_text(turn)
    assert ELIDED in text
    latest = "<tool_response>\n" if isinstance(turn.format, ToolCallFormat) else "Observation: "
    assert text.rsplit(latest, 1)[1].startswith("long.txt, lines 1-6 of 6:\n")  # the latest, in full


def test_a_run_that_outgrows_the_context_with_every_observation_elided_is_a_clear_error(
    tiny_model: TinySetup, tools: list[Tool]
) -> None:
    read_file = next(tool for tool in tools if tool.name == "read_file")
    turn = make_turn(tiny_model, LocalSettings(max_tokens=64), n_ctx=1024)
    # The question fits, but each step adds a reply and an elided observation's marker.
    messages = start("Summarize this: " + "the answer is not in this line of the file. " * 30)
    with pytest.raises(
        BackendError, match=r"room for 960 beside the reply; raise --n-ctx or shorten the task"
    ):
        for _ in range(20):
            result = turn(messages, [read_file.spec], NamedToolChoice(name="read_file"), CancelToken())
            assert isinstance(result, ToolRequests)
            messages.append(assistant_message_for(result))
            content = read_file.run({"path": "long.txt"}, CancelToken())
            messages.extend(
                ToolMessage(request_id=r.id, name=r.name, content=content) for r in result.requests
            )
    assert len(turn.generator.steps) >= 2
    assert held_text(turn).count(ELIDED) == len(turn.generator.steps) - 1
