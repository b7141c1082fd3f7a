"""How each reply format lays out a history: the tool_call format in Qwen2.5's own chat template
(which lays out tools) and in SmolLM2's (which does not), and the react format in a plain prompt
and in both templates (tests/external/chat_templates).

Rendering must be append-only: the prompt of each step is the last prompt, then the reply exactly
as the grammar made the model write it, then what is new; so the KV cache of all of it is reused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import pytest
from sample_specs import CALCULATOR, CLOCK, SEARCH
from tiny_gguf import QWEN_TEMPLATE, SMOLLM_TEMPLATE

from localagent.core.messages import (
    AssistantMessage,
    Message,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    ToolRequests,
    UserMessage,
    assistant_message_for,
)
from localagent.errors import RecoverableTurnError
from localagent.formats.base import HowWritten, Prompt, ReplyFormat
from localagent.formats.chat_template import ChatTemplate
from localagent.formats.react.format import ReactFormat
from localagent.formats.tool_call.format import ToolCallFormat
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

QWEN = ChatTemplate(QWEN_TEMPLATE, "<|endoftext|>", "<|im_end|>")
SMOLLM = ChatTemplate(SMOLLM_TEMPLATE, "<|im_start|>", "<|im_end|>")
TOOLS = [CALCULATOR, SEARCH, CLOCK]
SYSTEM = "You are a careful assistant."
TASK = "What is 2 + 3, and what do my notes say about milk?"
LISTING = "errands.md: # Errands\nrecipes/soup.md: # Leek soup"


def start(task: str = TASK, system: str | None = SYSTEM) -> list[Message]:
    return ([SystemMessage(content=system)] if system is not None else []) + [UserMessage(content=task)]


def tool_json(tool: ToolSpec) -> str:
    return json.dumps(tool.to_openai(), ensure_ascii=False)


# --- the tool_call format in each template ----------------------------------------------------------


def test_qwen_lays_out_the_tools_once_in_its_system_turn() -> None:
    text = ToolCallFormat(QWEN).render(start(), TOOLS).text
    system, rest = text.split("<|im_end|>\n", 1)
    assert system.startswith(f"<|im_start|>system\n{SYSTEM}\n\n# Tools\n\n")
    assert system.count("\n<tools>\n") == 1
    assert all(system.count(f"\n{tool_json(tool)}\n") == 1 for tool in TOOLS)
    assert system.endswith('{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')
    assert rest == f"<|im_start|>user\n{TASK}<|im_end|>\n<|im_start|>assistant\n"


def test_a_template_without_tools_gets_the_tools_block_in_its_system_turn() -> None:
    text = ToolCallFormat(SMOLLM).render(start(), TOOLS).text
    instructions = prompts.tool_call_instructions(TOOLS)
    assert text == (
        f"<|im_start|>system\n{SYSTEM}\n\n{instructions}<|im_end|>\n"
        f"<|im_start|>user\n{TASK}<|im_end|>\n<|im_start|>assistant\n"
    )
    assert all(instructions.count(f"\n{tool_json(tool)}\n") == 1 for tool in TOOLS)
    # With no system prompt, the tools block is the system turn.
    alone = ToolCallFormat(SMOLLM).render(start(system=None), TOOLS).text
    assert alone.startswith(f"<|im_start|>system\n{instructions}<|im_end|>\n<|im_start|>user\n{TASK}")


@pytest.mark.parametrize("template", [QWEN, SMOLLM], ids=["qwen", "smollm"])
def test_without_tools_there_is_no_tools_block(template: ChatTemplate) -> None:
    text = ToolCallFormat(template).render(start(), []).text
    assert text == (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{TASK}<|im_end|>\n<|im_start|>assistant\n"
    )


@pytest.mark.parametrize("template", [QWEN, SMOLLM], ids=["qwen", "smollm"])
def test_tool_results_of_one_step_share_one_user_turn_of_tool_responses(template: ChatTemplate) -> None:
    """Qwen's template writes results so (its tool role); the format writes them the same way for a
    template that knows no tools."""
    reply = ToolRequests(
        requests=[
            {"id": "call_1", "name": "calculator", "arguments": {"expression": "2 + 3"}},  # type: ignore[list-item]
            {"id": "call_2", "name": "clock", "arguments": {}},  # type: ignore[list-item]
        ]
    )
    history = [
        *start(),
        assistant_message_for(reply),
        ToolMessage(request_id="call_1", name="calculator", content="5"),
        ToolMessage(request_id="call_2", name="clock", content="12:00\nnoon"),
    ]
    text = ToolCallFormat(template, max_actions=3).render(history, TOOLS).text
    assert text.endswith(
        "<|im_end|>\n<|im_start|>user\n<tool_response>\n5\n</tool_response>\n"
        "<tool_response>\n12:00\nnoon\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    )


# --- append-only over a run, for every format and template ------------------------------------------


@dataclass(frozen=True)
class Setup:
    reply_format: ReplyFormat
    # The replies of a run as the grammar makes the model write them, and whether each was cut off.
    replies: tuple[tuple[str, bool], ...]


def tool_call(name: str, arguments: str) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {arguments}}}\n</tool_call>'


TOOL_CALL_REPLIES = (
    ("I will add the numbers first.\n" + tool_call("calculator", '{"expression": "2 + 3"}'), False),
    (tool_call("search", '{"query":"milk"}') + "\n" + tool_call("clock", "{}"), False),
    ('Once more.\n<tool_call>\n{"name": "search", "arguments": {"query": "mi', True),
    ("Searching again.\n\n" + tool_call("search", '{"query": "milk"}'), False),
    ("2 + 3 is 5.\nYour notes say: buy milk.", False),
)
REACT_REPLIES = (
    (
        'Thought: I will add the numbers first.\nAction: calculator\nAction Input: {"expression": "2 + 3"}\n',
        False,
    ),
    (
        'Thought: Both.\nAction: search\nAction Input: {"query":"milk"}\nAction: clock\nAction Input: {}\n',
        False,
    ),
    ('Thought: Once more.\nAction: search\nAction Input: {"query": "mi', True),
    ('Thought: Searching again.\nAction: search\nAction Input: {"query": "milk"}\n', False),
    ("Thought: I know it.\nFinal Answer: 2 + 3 is 5. Your notes say: buy milk.", False),
)
SETUPS = {
    "tool_call-qwen": Setup(ToolCallFormat(QWEN, max_actions=3), TOOL_CALL_REPLIES),
    "tool_call-smollm": Setup(ToolCallFormat(SMOLLM, max_actions=3), TOOL_CALL_REPLIES),
    "react-plain": Setup(ReactFormat(None, max_actions=3), REACT_REPLIES),
    "react-qwen": Setup(ReactFormat(QWEN, max_actions=3), REACT_REPLIES),
    "react-smollm": Setup(ReactFormat(SMOLLM, max_actions=3), REACT_REPLIES),
}


def run(setup: Setup, choice: ToolChoice = "auto") -> tuple[list[Prompt], list[str]]:
    """The prompt of every step of a run with these replies, as the runner builds the history: each
    reply, then its tool results, or, for one cut off, the reply as written and the feedback."""
    history = start()
    rendered, written = [], []
    results = iter(["5", "milk: buy two litres", "12:00", "milk: buy two litres"])
    for text, cut_off in setup.replies:
        rendered.append(setup.reply_format.render(history, TOOLS))
        written.append(text)
        try:
            parsed = setup.reply_format.parse(text, TOOLS, choice, HowWritten(True, cut_off, 64))
        except RecoverableTurnError as error:
            assert cut_off
            history += [
                assistant_message_for_raw(error.raw),
                UserMessage(content=error.feedback, feedback=True),
            ]
            continue
        assert not cut_off
        history.append(assistant_message_for(parsed.result))
        if isinstance(parsed.result, ToolRequests):
            history += [
                ToolMessage(request_id=r.id, name=r.name, content=next(results))
                for r in parsed.result.requests
            ]
    # A chat session goes on with the next question after the answer.
    history.append(UserMessage(content="Thanks. And 3 + 4?"))
    rendered.append(setup.reply_format.render(history, TOOLS))
    return rendered, written


def assistant_message_for_raw(text: str) -> Message:
    return AssistantMessage(content=text)


@pytest.mark.parametrize("name", list(SETUPS))
def test_each_prompt_is_the_last_one_then_the_reply_as_written_then_what_is_new(name: str) -> None:
    prompts_, replies = run(SETUPS[name])
    for step, (before, reply, after) in enumerate(zip(prompts_, replies, prompts_[1:], strict=False)):
        assert after.text.startswith(before.text + reply), f"step {step}: {after.text[len(before.text) :]!r}"


@pytest.mark.parametrize("name", list(SETUPS))
def test_the_instructions_start_every_prompt_of_a_run_and_of_other_tasks(name: str) -> None:
    reply_format = SETUPS[name].reply_format
    prompts_, _ = run(SETUPS[name])
    (instructions,) = prompts_[0].shared_starts
    assert SYSTEM in instructions and "calculator" in instructions
    assert TASK not in instructions
    for prompt in prompts_:
        assert prompt.shared_starts == (instructions,)
        assert prompt.text.startswith(instructions)
    assert reply_format.render(start("Another task."), TOOLS).shared_starts == (instructions,)


@pytest.mark.parametrize("name", list(SETUPS))
def test_the_listing_is_shared_by_every_task_in_the_folder_and_not_by_another_folder(name: str) -> None:
    reply_format = SETUPS[name].reply_format
    in_folder = prompts.first_task(TASK, LISTING)
    (instructions, with_listing) = reply_format.render(start(in_folder), TOOLS).shared_starts
    assert with_listing.startswith(instructions) and with_listing.endswith(LISTING + "\n\n")
    assert TASK not in with_listing
    other_task = reply_format.render(start(prompts.first_task("Another task.", LISTING)), TOOLS)
    assert other_task.shared_starts == (instructions, with_listing)
    assert other_task.text.startswith(with_listing)
    other_folder = reply_format.render(start(prompts.first_task(TASK, "todo.md: # Chores")), TOOLS)
    assert other_folder.shared_starts[0] == instructions
    assert other_folder.shared_starts[1] != with_listing


@pytest.mark.parametrize("name", list(SETUPS))
def test_without_a_system_prompt_no_shared_start_holds_the_task(name: str) -> None:
    prompt = SETUPS[name].reply_format.render(start(prompts.first_task(TASK, LISTING), system=None), TOOLS)
    for shared in prompt.shared_starts:
        assert TASK not in shared
        assert prompt.text.startswith(shared)


def test_a_malformed_reply_is_rendered_as_written_then_the_feedback() -> None:
    setup = SETUPS["tool_call-qwen"]
    prompts_, replies = run(setup)
    cut = replies[2]
    feedback = prompts.cut_off(64, in_call=True)
    assert prompts_[3].text[len(prompts_[2].text) :] == (
        f"{cut}<|im_end|>\n<|im_start|>user\n{feedback}<|im_end|>\n<|im_start|>assistant\n"
    )


def test_reasoning_and_calls_render_as_the_grammar_writes_them() -> None:
    """A reply's preface and calls come back from the parsed turn, not from the text: render them
    from a history that was never text (a transcript, a scripted run) in the same layout."""
    reply = ToolRequests(
        requests=[{"id": "c1", "name": "calculator", "arguments": {"expression": "1"}, "raw_arguments": ""}],  # type: ignore[list-item]
        reasoning="Adding.\n",
    )
    history: Sequence[Message] = [*start(), assistant_message_for(reply)]
    text = ToolCallFormat(QWEN).render(history, TOOLS).text
    assert text.endswith(
        '<|im_start|>assistant\nAdding.\n<tool_call>\n{"name": "calculator", '
        '"arguments": {"expression": "1"}}\n</tool_call><|im_end|>\n<|im_start|>assistant\n'
    )
