"""When a reply in the native chat protocol cannot be used, and what the model is told.

The same rules serve the OpenAI chat turn and the scripted turn's chat items, so the fake answers
as the real thing does. The text formats (formats/) apply them to their own parsed replies.
"""

from __future__ import annotations

from localagent.core.messages import Final, NamedToolChoice, ToolChoice, ToolRequest, ToolRequests, Usage
from localagent.errors import RecoverableTurnError
from localagent.turn import prompts


def native_reply_shapes(tool_choice: ToolChoice) -> str:
    if isinstance(tool_choice, NamedToolChoice):
        return f"A call to the tool {tool_choice.name} is required now: reply with that call, not with text."
    if tool_choice == "required":
        return "A tool call is required now: reply with a call to one of your tools, not with text."
    if tool_choice == "none":
        return "Reply with your answer as text."
    return "Call a tool, or write your final answer as text."


def call_required(tool_choice: ToolChoice) -> bool:
    return tool_choice == "required" or isinstance(tool_choice, NamedToolChoice)


def chat_result(
    content: str,
    reasoning: str | None,
    requests: list[ToolRequest],
    tool_choice: ToolChoice,
    *,
    cut_off: bool = False,
    token_limit: int | None = None,
    usage: Usage | None = None,
    partial: str | None = None,
) -> Final | ToolRequests:
    """The turn result of a chat reply, or RecoverableTurnError when the model must write it again.

    `partial` is what a cut-off reply is kept as in the history, when it differs from `content`.
    """
    if cut_off:
        feedback = prompts.cut_off(token_limit, in_call=bool(requests))
        raise RecoverableTurnError(feedback, content if partial is None else partial, "cut_off")
    if requests:
        return ToolRequests(requests=requests, content=content, reasoning=reasoning, usage=usage)
    shapes = native_reply_shapes(tool_choice)
    if call_required(tool_choice):
        raise RecoverableTurnError(prompts.required_call(tool_choice, shapes), content, "no_required_call")
    if not content.strip():
        raise RecoverableTurnError(prompts.empty_reply(shapes), content, "empty")
    return Final(content=content, reasoning=reasoning, usage=usage)
