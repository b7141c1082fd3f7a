"""Every string the model reads that localagent writes: instructions, notes, feedback and tool errors.

Tuning a prompt is an edit to this file. Small models copy concrete text from their prompt into
their answers, so the only worked examples come from a folder unlike any a user has (a birdwatcher's
notes), and only for the tools that are offered. A test renders every one of them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from localagent.core.messages import NamedToolChoice, ToolChoice
from localagent.evidence.passages import Passage
from localagent.tools.spec import ToolSpec

# --- the system prompt ---


SYSTEM_PROMPT = (
    "You are a careful assistant working in a folder of files. "
    "You call the tools yourself, one call at a time, and read their results; the user cannot. "
    "Look at the files before you answer questions about them: read the file that holds the answer, "
    "or, when you do not know which one it is, search all files for a word from the question. "
    "When a note says that no file mentions what a question about the files asks for, the files do not "
    "hold the answer: say so, and never give a value that belongs to something else. "
    "Questions of general knowledge you answer yourself. "
    "When you are asked to change a file, change it with a tool before you answer. "
    "When you know the answer, give it in one or two sentences."
)


_LISTING_HEADING = "Files in the workspace:\n"
_EVIDENCE_HEADING = "Lines of the files that hold what the question names:\n"
_ABSENT_HEADING = "Note: "


def first_task(task: str, listing: str | None, evidence: str = "") -> str:
    """The user's first task of a run, after a short view of the workspace when there is one, and the
    evidence for it (`evidence_block`) when there is some."""
    task = with_evidence(task, evidence)
    if not listing:
        return task
    return f"{_LISTING_HEADING}{listing}\n\n{task}"


def with_tables(listing: str, tables: str) -> str:
    """The workspace's listing with its tables for query_tables after it, when it has some."""
    return f"{listing}\nTables for query_tables:\n{tables}" if tables else listing


def with_evidence(task: str, evidence: str) -> str:
    return f"{evidence}\n\nQuestion: {task}" if evidence else task


def listing_block(user_message: str) -> str:
    """The view of the workspace `first_task` put before the task, through its blank line; "" for none."""
    if user_message.startswith(_LISTING_HEADING) and "\n\n" in user_message:
        return user_message.split("\n\n", 1)[0] + "\n\n"
    return ""


def question_of(message: str) -> str:
    """The task in a user message, without the view of the workspace and the evidence put before it."""
    rest = message[len(listing_block(message)) :]
    if rest.startswith((_EVIDENCE_HEADING, _ABSENT_HEADING)) and "\n\nQuestion: " in rest:
        return rest.split("\n\nQuestion: ", 1)[1]
    return rest


def evidence_block(
    passages: Sequence[Passage],
    absent: Sequence[str],
    counts: Sequence[tuple[str, Sequence[tuple[str, int]]]] = (),
) -> str:
    """The passages found for a question, each under its path, lines and section, and for a question
    that asks how many, the lines that hold its key terms, counted; or the key terms of the question
    that no file holds. No blank line inside, so `question_of` can find its end."""
    if absent:
        named = " or ".join(f"'{term}'" for term in absent)
        return (
            f"{_ABSENT_HEADING}no file in the workspace mentions {named} (a search of every file's text "
            "and name found nothing)."
        )
    if not passages and not counts:
        return ""
    blocks = []
    for passage in passages:
        lines = passage.text.split("\n")
        span = (
            f"line {passage.first_line}"
            if len(lines) == 1
            else f"lines {passage.first_line}-{passage.first_line + len(lines) - 1}"
        )
        under = f" (under '{passage.context}')" if passage.context else ""
        numbered = "\n".join(f"{passage.first_line + at}: {line}" for at, line in enumerate(lines))
        blocks.append(f"{passage.path}, {span}{under}:\n{numbered}")
    notes = []
    for term, files in counts:
        where = ", ".join(f"{count} in {path}" for path, count in files)
        notes.append(f"{_ABSENT_HEADING}the lines that hold '{term}' as written: {where}.")
    return "\n".join(([_EVIDENCE_HEADING + "\n".join(blocks)] if blocks else []) + notes)


# --- the text-tag (ReAct) format ---


_ANSWER_SHAPE = (
    "Reply with a line 'Thought:' with one short line of reasoning, then a line 'Final Answer:' "
    "with the answer."
)
_REPLY_SHAPE = (
    "Each reply starts with 'Thought:' and one short line of reasoning. Then either a tool call, "
    "as a line 'Action:' with the tool's name and a line 'Action Input:' with its arguments as one "
    "JSON object, after which you stop and wait for the 'Observation:' with its result; or, once "
    "you know the answer, a line 'Final Answer:' with the answer."
)


def react_instructions(tools: Sequence[ToolSpec]) -> str:
    """The agent's instructions in the text-tag format: the task, the tools, the shape of a reply
    described in words, and worked runs."""
    if not tools:
        return f"Answer the question. {_ANSWER_SHAPE}"
    text = f"Answer the question, using tools when they help.\n\n{react_reply_format(tools)}"
    example = react_example(tools) if REACT_EXAMPLE else None
    return f"{text}\n\n{example}" if example else text


def react_reply_format(tools: Sequence[ToolSpec]) -> str:
    """Only what a reply in the text-tag format needs: the tools and the shape of a reply. A served
    request gets this after the client's own system prompt, and no agent instructions of localagent's."""
    if not tools:
        return _ANSWER_SHAPE
    lines = ["Tools:"]
    lines.extend(f"- {tool.name}: {tool.description} Input: {tool.compact_schema()}" for tool in tools)
    return "\n".join([*lines, "", _REPLY_SHAPE])


REACT_EXAMPLE = True


def react_example(tools: Sequence[ToolSpec]) -> str | None:
    """Worked runs in a folder unlike any a user has, for the file tools that are offered."""
    names = {tool.name for tool in tools}
    examples = []
    if {"search_text", "read_file"} <= names:
        examples.append(
            "Question: Where did I see the kingfisher?\n"
            "Thought: I do not know which file mentions the kingfisher, so I search all files.\n"
            "Action: search_text\n"
            'Action Input: {"pattern": "kingfisher"}\n'
            "Observation: Matches for 'kingfisher' in . (1 matching line):\n"
            "sightings/may.md:4: - kingfisher, see pond.md\n"
            "Thought: The May sightings point to pond.md, so I read it.\n"
            "Action: read_file\n"
            'Action Input: {"path": "pond.md"}\n'
            "Observation: pond.md, lines 1-2 of 2:\n"
            "1: # The mill pond\n2: Kingfishers nest in the north bank.\n"
            "Thought: I know the answer now.\n"
            "Final Answer: At the mill pond, where kingfishers nest in the north bank."
        )
    if "query_tables" in names:
        examples.append(
            "Question: How many coots have I counted in all?\n"
            "Thought: The counts are rows of the sightings table; I add up the coot rows with a query.\n"
            "Action: query_tables\n"
            'Action Input: {"sql": "SELECT SUM(count) FROM sightings WHERE species = \'coot\'"}\n'
            "Observation: SUM(count) = 27\n"
            "Thought: I know the answer now.\n"
            "Final Answer: 27 coots."
        )
    if {"read_file", "calculator"} <= names:
        examples.append(
            "Question: How many birds did I count in total at the pond?\n"
            "Thought: The counts are in pond.md; I read them first.\n"
            "Action: read_file\n"
            'Action Input: {"path": "pond.md"}\n'
            "Observation: pond.md, lines 1-3 of 3:\n1: # The mill pond\n2: herons: 3\n3: coots: 11\n"
            "Thought: I add the two counts with the calculator.\n"
            "Action: calculator\n"
            'Action Input: {"expression": "3 + 11"}\n'
            "Observation: 14\n"
            "Thought: I know the answer now.\n"
            "Final Answer: 14 birds: 3 herons and 11 coots."
        )
    if "run_python" in names:
        examples.append(
            "Question: How many coots have I counted in all?\n"
            "Thought: The counts are rows of sightings.csv (date,species,count); "
            "Python adds up the coot rows.\n"
            "Action: run_python\n"
            'Action Input: {"code": "import csv\\ntotal = 0\\n'
            "for row in csv.DictReader(open('sightings.csv')):\\n    if row['species'] == 'coot':\\n"
            "        total += int(row['count'])\\nprint(total)\"}\n"
            "Observation: 27\n"
            "Thought: I know the answer now.\n"
            "Final Answer: 27 coots."
        )
    if {"read_file", "replace_in_file"} <= names:
        examples.append(
            "Question: I saw 5 herons, not 3. Fix it in my pond notes.\n"
            "Thought: I read pond.md to copy the exact line to change.\n"
            "Action: read_file\n"
            'Action Input: {"path": "pond.md"}\n'
            "Observation: pond.md, lines 1-3 of 3:\n1: # The mill pond\n2: herons: 3\n3: coots: 11\n"
            "Thought: I replace the heron line.\n"
            "Action: replace_in_file\n"
            'Action Input: {"path": "pond.md", "old": "herons: 3", "new": "herons: 5"}\n'
            "Observation: Replaced the text at line 2 of pond.md.\n"
            "Thought: The change is made.\n"
            "Final Answer: pond.md now says herons: 5."
        )
    if "tick_box" in names:
        examples.append(
            "Question: I have cleaned the owl box. Tick it off in boxes.md.\n"
            "Thought: I tick the box of that item in boxes.md, named by its words.\n"
            "Action: tick_box\n"
            'Action Input: {"path": "boxes.md", "item": "owl box"}\n'
            "Observation: Ticked line 2 of boxes.md: - [x] Clean the owl box\n"
            "Thought: The change is made.\n"
            "Final Answer: The owl box is ticked off in boxes.md."
        )
    if not examples:
        return GENERIC_EXAMPLE if names - _FILE_TOOLS else None
    return "Examples, from another folder (a birdwatcher's notes):\n\n" + "\n\n".join(examples)


_FILE_TOOLS = {"list_dir", "read_file", "search_text", "write_file", "replace_in_file"}

# For tool sets the file examples do not cover: the shape of one call and its answer, with a tool
# the model is never offered (the grammar keeps it from writing that name).
GENERIC_EXAMPLE = (
    "Example, with a tool you do not have:\n\n"
    "Question: How many herons did the club count on 3 May 2024?\n"
    "Thought: The count_birds tool gives the count for one species on one day.\n"
    "Action: count_birds\n"
    'Action Input: {"species": "heron", "date": "2024-05-03"}\n'
    "Observation: 7\n"
    "Thought: I know the answer now.\n"
    "Final Answer: The club counted 7 herons on 3 May 2024."
)


def react_reply_shapes(tool_names: Sequence[str], tool_choice: ToolChoice = "auto") -> str:
    """The reply shapes the tool choice allows, with placeholders, for feedback after a bad reply."""
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


# --- the tool-call format (<tool_call>{"name": ..., "arguments": ...}</tool_call>) ---

TOOL_CALL_OPEN = "<tool_call>\n"
TOOL_CALL_CLOSE = "\n</tool_call>"


def tool_call_instructions(tools: Sequence[ToolSpec]) -> str:
    """The Hermes-style tools block, for chat templates that do not render tools themselves."""
    listed = "\n".join(json.dumps(tool.to_openai(), ensure_ascii=False) for tool in tools)
    return (
        "# Tools\n\nYou may call one of these functions to help with the user's request.\n\n"
        f"You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n{listed}\n"
        "</tools>\n\nFor a function call, return a JSON object with the function name and arguments "
        'within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, '
        '"arguments": <args-json-object>}\n</tool_call>'
    )


def tool_call_reply_shapes(tool_names: Sequence[str], tool_choice: ToolChoice = "auto") -> str:
    if isinstance(tool_choice, NamedToolChoice):
        tool_names = [tool_choice.name]
    call = (
        f'{TOOL_CALL_OPEN}{{"name": "<one of: {", ".join(tool_names)}>", '
        f'"arguments": <the arguments as one JSON object>}}{TOOL_CALL_CLOSE}'
    )
    if tool_choice == "none" or not tool_names:
        return "Reply with your answer as plain text."
    if tool_choice == "required" or isinstance(tool_choice, NamedToolChoice):
        return f"Reply with a tool call:\n{call}"
    return f"Reply with a tool call:\n{call}\nor, when you know the answer, with the answer as plain text."


# --- feedback on a reply that cannot be used ---


def unparsable(detail: str, shapes: str) -> str:
    return f"Format error: {detail}. {shapes}"


def empty_reply(shapes: str) -> str:
    return unparsable("the reply is empty", shapes)


def cut_off(token_limit: int | None, *, in_call: bool = False) -> str:
    limit = f"the {token_limit}-token limit" if token_limit else "the token limit"
    if in_call:
        return (
            f"Format error: your reply was cut off at {limit} while writing a tool call, so nothing "
            "was run. Call the tool again with shorter arguments (split long content over several calls)."
        )
    return (
        f"Format error: your reply was cut off at {limit} before it was complete. "
        "Write a shorter reply: a short tool call with compact arguments, or a short answer."
    )


def cut_answer(answer: str, token_limit: int | None) -> str:
    """An answer the token limit cut short, as it stands, marked as cut."""
    limit = f"the {token_limit}-token limit" if token_limit else "the token limit"
    return f"{answer.rstrip()} […]\n[The answer was cut off at {limit}.]"


def required_call(tool_choice: ToolChoice, shapes: str) -> str:
    which = f"the tool {tool_choice.name}" if isinstance(tool_choice, NamedToolChoice) else "one of the tools"
    return f"Format error: a tool call is required now, not an answer. Call {which}. {shapes}"


LOOPING = (
    "Format error: your reply kept repeating the same words, so it was stopped and nothing was run. "
    "Write a short reply: one tool call, or your answer."
)

INTERRUPTED = (
    "Your reply was interrupted before it was complete (the connection to the model dropped), "
    "so nothing was run. Send your reply again."
)


def missing_input(tool_name: str, example: str | None = None) -> str:
    return (
        f"Action Input is missing after 'Action: {tool_name}'; "
        f"write it on the next line as a JSON object{_like(example)}"
    )


def invalid_json(tool_name: str, reason: str, example: str | None = None) -> str:
    return (
        f"Invalid JSON arguments for tool {tool_name}: {reason}. "
        f"Write the arguments as one JSON object{_like(example)}"
    )


def argument_example(parameters: dict[str, Any]) -> str | None:
    """A tool's required arguments (or all, when none is required) as one line of JSON with placeholders.

    The placeholders say only a type ("...", 0, true, [], {}): there is no value in them to copy.
    """
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, dict) or not isinstance(required, list | None):
        return None
    names = [name for name in required or [] if isinstance(name, str) and name in properties]
    names = names or [name for name in properties if isinstance(name, str)]
    if not names:
        return None
    return json.dumps({name: _placeholder(properties[name]) for name in names}, ensure_ascii=False)


def _like(example: str | None) -> str:
    return f" on one line, like {example}" if example else ""


_PLACEHOLDERS: dict[str, Any] = {"integer": 0, "number": 0, "boolean": True, "array": [], "object": {}}


def _placeholder(schema: Any) -> Any:
    if not isinstance(schema, dict):
        return "..."
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    kind = schema.get("type")
    return _PLACEHOLDERS.get(kind, "...") if isinstance(kind, str) else "..."


NO_FUNCTION_NAME = "the call has no function name; name one of the tools"

# --- the runner's notes ---

WRAP_UP_RETRY = (
    "Tool error: not run. The step limit is reached and tools are off. "
    "Reply now with your final answer, using what you already know."
)


def steps_left(count: int) -> str | None:
    """The note after a step's last tool result: near the end only, for small models copied it."""
    if count > 2:
        return None
    if count == 1:
        return "[1 step left: tools are off for it. Give your final answer next.]"
    return f"[{count} steps left]"


def answer_now(question: str) -> str:
    return f"The question to answer now: {question}"


ELIDED_OBSERVATION = "[older observation elided to fit the context window]"

# --- tool errors ---

REPEATED_CALL = (
    "(You already made this exact call; its result is above. Tools are off for your next reply: "
    "answer from what you have found.)"
)
REPEATED_FAILED_CALL = "Tool error: not run: the same call earlier in this step failed."
MISSING_RESULT = "Tool error: no result: the call was not run."
CANCELLED_BEFORE = "Tool error: cancelled before it ran."
CANCELLED_WHILE = "Tool error: cancelled while running."


def other_tool_required(name: str) -> str:
    return f"Tool error: not run: only {name} may be called now. Call {name}."


def too_many_calls(limit: int) -> str:
    return f"Tool error: not run: at most {limit} tool calls are allowed in one step."


def tool_error(message: str) -> str:
    return f"Tool error: {message}"


def unknown_tool(name: str, available: Sequence[str]) -> str:
    return f"Tool error: unknown tool {name!r}. Available tools: {', '.join(available) or '(none)'}."


def invalid_arguments(name: str, problems: str) -> str:
    return f"Tool error: invalid arguments for {name}: {problems}"


def not_approved(name: str) -> str:
    return (
        f"Tool error: the user did not approve {name}; nothing was changed. "
        "Do not retry it; continue without it or explain in your answer."
    )


def tool_crashed(name: str, detail: str) -> str:
    return f"Tool error: {name} failed: {detail}"


def unanswered_result(name: str, request_id: str, content: str) -> str:
    """A tool result that answers no open call, kept as text for chat APIs that would refuse it."""
    return f"Result of {name} ({request_id}): {content}"
