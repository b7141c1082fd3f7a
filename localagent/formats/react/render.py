"""Rendering a history as a text-tag prompt.

Rendering is append-only: a message renders the same whatever follows it, and an assistant turn
renders exactly as the grammar made the model write it. So each step's prompt starts with the
previous prompt plus the previous reply, and the KV cache of that prefix is reused.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from localagent.core.messages import AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage
from localagent.tools.spec import ToolSpec
from localagent.turn import prompts

# Without a grammar a base model goes on past its reply: it writes the tool's result itself, or,
# after an answer, the next question. Unconstrained generation stops at either.
UNCONSTRAINED_STOPS = ("\nObservation:", "\nQuestion:")
TurnRole = Literal["system", "user", "assistant", "observation"]


@dataclass(frozen=True)
class PromptTurn:
    role: TurnRole
    text: str


def render_reply(message: AssistantMessage) -> str:
    """The assistant turn as the grammar makes the model write it."""
    thought = f"Thought: {message.reasoning}\n" if message.reasoning is not None else ""
    if message.tool_requests:
        actions = "".join(
            f"Action: {r.name}\nAction Input: {_arguments_text(r.raw_arguments, r.arguments)}\n"
            for r in message.tool_requests
        )
        return thought + actions
    # The chat grammar ends an answer with the end of turn, the plain one with a line break (added
    # where the plain prompt is laid out).
    return f"{thought}Final Answer: {message.content}"


def _arguments_text(raw: str, arguments: dict | None) -> str:
    """The arguments as written when that was one line of JSON, else their compact JSON form."""
    if "\n" not in raw:
        try:
            json.loads(raw)
        except json.JSONDecodeError:
            pass
        else:
            return raw
    if arguments is None:
        return raw.replace("\n", " ")
    return json.dumps(arguments, ensure_ascii=False)


def prompt_turns(
    messages: Sequence[Message], tools: Sequence[ToolSpec], *, plain: bool, agent: bool = True
) -> list[PromptTurn]:
    """The history as prompt turns: the instructions, then the conversation. Without `agent`, the
    instructions are only the tools and the reply's shape, after the system message as it is."""
    instructions = prompts.react_instructions(tools) if agent else prompts.react_reply_format(tools)
    system = next((m.content for m in messages if isinstance(m, SystemMessage)), "")
    turns = [PromptTurn("system", f"{system}\n\n{instructions}" if system else instructions)]
    step_results: list[ToolMessage] = []
    for index, message in enumerate(messages):
        if not isinstance(message, ToolMessage) and step_results:
            turns.append(_observations(step_results))
            step_results = []
        if isinstance(message, UserMessage):
            if message.feedback:
                turns.append(PromptTurn("observation", f"Observation: {message.content}\n"))
            else:
                # In a chat template the user's turn is the question; a plain prompt must label it.
                label = "Question: " if plain else ""
                turns.append(PromptTurn("user", f"{label}{message.content}\n"))
        elif isinstance(message, AssistantMessage):
            malformed = _followed_by_feedback(messages, index)
            text = message.content if malformed else render_reply(message)
            turns.append(PromptTurn("assistant", text if text.endswith("\n") or not plain else text + "\n"))
        elif isinstance(message, ToolMessage):
            step_results.append(message)
    if step_results:
        turns.append(_observations(step_results))
    return turns


def _observations(results: list[ToolMessage]) -> PromptTurn:
    lines = []
    for position, message in enumerate(results, start=1):
        label = f"[{position}/{len(results)} {message.name}] " if len(results) > 1 else ""
        lines.append(f"Observation: {label}{message.content}\n")
    return PromptTurn("observation", "".join(lines))


def _followed_by_feedback(messages: Sequence[Message], index: int) -> bool:
    following = messages[index + 1] if index + 1 < len(messages) else None
    return isinstance(following, UserMessage) and following.feedback


def instructions_of(turns: Sequence[PromptTurn]) -> str:
    """The part of a plain prompt before the conversation: the same for every task with these tools."""
    return turns[0].text + "\n\n"


def render_plain(turns: Sequence[PromptTurn]) -> str:
    """A base model's prompt: the instructions, a blank line, then the Question/Thought/... text."""
    return instructions_of(turns) + "".join(turn.text for turn in turns[1:])


def chat_messages(turns: Sequence[PromptTurn]) -> list[dict[str, str]]:
    """The turns as chat messages for a GGUF chat template; observations go back as the user."""
    messages: list[dict[str, str]] = []
    for turn in turns:
        role = "user" if turn.role == "observation" else turn.role
        # A reply stays as the model wrote it, its final line break too (the KV cache holds it).
        text = turn.text if role == "assistant" else turn.text.rstrip("\n")
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages
