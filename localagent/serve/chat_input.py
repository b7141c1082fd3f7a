"""A chat request's messages, tools and tool choice as localagent's own types: the inverse of
`backends.openai_chat.to_openai_messages`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema
from pydantic import ValidationError

from localagent.backends.arguments import parse_tool_call
from localagent.core.messages import (
    AssistantMessage,
    Message,
    NamedToolChoice,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    ToolRequest,
    UserMessage,
)
from localagent.serve.chat_request import (
    AssistantIn,
    ChatRequest,
    Content,
    MessageIn,
    NamedChoice,
    SystemIn,
    ToolDefinition,
    ToolResultIn,
)
from localagent.serve.errors import RequestError
from localagent.serve.reply_memory import ReplyMemory
from localagent.serve.text_calls import calls_in_text, result_text
from localagent.tools.spec import ToolSpec

_EMPTY_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True)
class TurnInput:
    messages: list[Message]
    tools: list[ToolSpec]
    tool_choice: ToolChoice


def turn_input(request: ChatRequest, memory: ReplyMemory) -> TurnInput:
    tools = [tool_spec(tool, index) for index, tool in enumerate(request.tools or [])]
    names = [tool.name for tool in tools]
    for index, name in enumerate(names):
        if name in names[:index]:
            raise RequestError(
                f"Invalid 'tools': the name {name!r} is given to more than one tool", param=f"tools[{index}]"
            )
    return TurnInput(read_messages(request.messages, memory), tools, tool_choice(request, tools))


def tool_spec(tool: ToolDefinition, index: int) -> ToolSpec:
    where = f"tools[{index}]"
    if tool.type != "function" or tool.function is None:
        raise RequestError(
            f"Invalid value for {where!r}: only tools of type 'function' with a 'function' object are "
            f"supported, not {tool.type!r}",
            param=where,
        )
    function = tool.function
    parameters = function.parameters if function.parameters is not None else _EMPTY_PARAMETERS
    problem = _schema_problem(parameters)
    if problem:
        raise RequestError(
            f"Invalid schema for function {function.name!r}: {problem}",
            param=f"{where}.function.parameters",
            code="invalid_function_parameters",
        )
    try:
        return ToolSpec(name=function.name, description=function.description or "", parameters=parameters)
    except ValidationError as error:
        reason = error.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
        raise RequestError(
            f"Invalid value for '{where}.function.name': {reason}", param=f"{where}.function.name"
        ) from None


def _schema_problem(parameters: dict[str, Any]) -> str | None:
    declared = parameters.get("type", "object")
    if declared != "object":
        return f"the parameters must be a JSON Schema of type 'object', not {json.dumps(declared)}"
    try:
        jsonschema.validators.validator_for(parameters).check_schema(parameters)
    except jsonschema.SchemaError as error:
        where = "/".join(str(part) for part in error.path)
        return f"{error.message}" + (f" (at {where})" if where else "")
    return None


def tool_choice(request: ChatRequest, tools: Sequence[ToolSpec]) -> ToolChoice:
    choice = request.tool_choice
    if choice is None:
        return "auto" if tools else "none"
    if isinstance(choice, NamedChoice):
        name = choice.function.name
        if name not in {tool.name for tool in tools}:
            known = ", ".join(tool.name for tool in tools) or "(no tools given)"
            raise RequestError(
                f"Invalid value for 'tool_choice': tool {name!r} is not among the tools; tools: {known}",
                param="tool_choice",
            )
        return NamedToolChoice(name=name)
    if choice == "required" and not tools:
        raise RequestError(
            "Invalid value for 'tool_choice': 'required' needs at least one tool in 'tools'",
            param="tool_choice",
        )
    return choice


def read_messages(messages: Sequence[MessageIn], memory: ReplyMemory) -> list[Message]:
    """The conversation, with every system message joined into one at the start (the reply
    formats read one system message), this server's own replies restored as written, and calls
    written as text read as calls, the user message after them as their result."""
    system: list[str] = []
    converted: list[Message] = []
    call_names: dict[str, str] = {}
    # Calls an assistant message wrote as text: the next user message holds their result.
    written: list[ToolRequest] = []
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if isinstance(message, SystemIn):
            system.append(message_text(message.content, where))
            continue
        if isinstance(message, AssistantIn):
            sent, as_text = _assistant(message, index)
            reply = memory.recall(sent)
            call_names.update((request.id, request.name) for request in reply.tool_requests)
            converted.append(reply)
        elif isinstance(message, ToolResultIn):
            name = call_names.get(message.tool_call_id)
            if name is None:
                raise RequestError(
                    f"Invalid parameter: {where} has role 'tool' and answers tool_call_id "
                    f"{message.tool_call_id!r}, which no earlier assistant message called",
                    param=f"{where}.tool_call_id",
                )
            text = message_text(message.content, where)
            converted.append(ToolMessage(request_id=message.tool_call_id, name=name, content=text))
        elif written:
            # One message holds the results of all the calls; it goes with the first.
            text = result_text(message_text(message.content, where))
            converted.append(ToolMessage(request_id=written[0].id, name=written[0].name, content=text))
        else:
            converted.append(UserMessage(content=message_text(message.content, where)))
        written = reply.tool_requests if isinstance(message, AssistantIn) and as_text else []
    if system:
        converted.insert(0, SystemMessage(content="\n\n".join(system)))
    return converted


def _assistant(message: AssistantIn, index: int) -> tuple[AssistantMessage, bool]:
    """The message, and whether its calls were written as text."""
    content = "" if message.content is None else message_text(message.content, f"messages[{index}]")
    requests = [
        parse_tool_call(call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or []
    ]
    found = None if requests else calls_in_text(content, index)
    if found is not None:
        content, requests = found
    reply = AssistantMessage(content=content, reasoning=message.reasoning_content, tool_requests=requests)
    return reply, found is not None


def message_text(content: Content, where: str) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for position, part in enumerate(content):
        if part.type == "text" and part.text is not None:
            texts.append(part.text)
        elif part.type == "refusal" and part.refusal is not None:
            texts.append(part.refusal)
        else:
            raise RequestError(
                f"Invalid content part in {where}: this model reads text only, and part {position} "
                f"has type {part.type!r}",
                param=f"{where}.content[{position}]",
            )
    return "\n".join(texts)
