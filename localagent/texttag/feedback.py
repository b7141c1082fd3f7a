"""What the model is told when a text-tag reply cannot be used: what went wrong and exactly what to write."""

from __future__ import annotations

from collections.abc import Sequence

from localagent.messages import NamedToolChoice, ToolChoice


def reply_format(tool_names: Sequence[str], tool_choice: ToolChoice = "auto") -> str:
    """The two reply shapes, restricted to what the tool choice allows."""
    if isinstance(tool_choice, NamedToolChoice):
        tool_names = [tool_choice.name]
    action = (
        "Thought: <one line: what you will do>\n"
        f"Action: <one of: {', '.join(tool_names)}>\n"
        "Action Input: <the arguments as one JSON object on one line>"
    )
    final = "Thought: <one line>\nFinal Answer: <your answer>"
    if tool_choice == "none" or not tool_names:
        return f"Reply exactly like this:\n{final}"
    if tool_choice == "required" or isinstance(tool_choice, NamedToolChoice):
        return f"Reply exactly like this:\n{action}"
    return f"Reply exactly like this:\n{action}\nor, when you know the answer:\n{final}"


def unparsable(detail: str, tool_names: Sequence[str], tool_choice: ToolChoice) -> str:
    return f"Format error: {detail}. {reply_format(tool_names, tool_choice)}"


def cut_off(token_limit: int | None) -> str:
    limit = f"the {token_limit}-token limit" if token_limit else "the token limit"
    return (
        f"Format error: your reply was cut off at {limit} before it was complete. "
        "Write a shorter reply: one short Thought line, then an Action with compact arguments, "
        "or a short Final Answer."
    )


def required_call(tool_names: Sequence[str], tool_choice: ToolChoice) -> str:
    which = tool_choice.name if isinstance(tool_choice, NamedToolChoice) else "one of the tools"
    return (
        f"Format error: a tool call is required now, not a final answer. Call {which}. "
        f"{reply_format(tool_names, tool_choice)}"
    )


def missing_input(tool_name: str) -> str:
    return f"Action Input is missing after 'Action: {tool_name}'; write it on the next line as a JSON object"


def invalid_json(tool_name: str, reason: str) -> str:
    return f"Invalid JSON arguments for tool {tool_name}: {reason}. Write Action Input as one JSON object"
