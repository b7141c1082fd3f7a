"""Reading text-tag replies written without a grammar: label variants, localized labels, `tool[arg]`.

Each shape accepted here is one seen from real models; the result is the same ReplyParts the strict
parser produces, with a note for every liberty taken.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from localagent.formats.react.reply import RawAction, ReplyParts

# Longer labels first: "Action Input" must win over "Action".
_LABELS: tuple[tuple[str, str], ...] = (
    ("input", r"action[ \t_-]*input|动作输入|行动输入|操作输入"),
    # LlamaIndex's ReAct prompt labels the final answer "Answer:".
    ("answer", r"(?:final[ \t_-]*)?answer|最终答案|最终回答|最终答复"),
    ("thought", r"thoughts?|thinking|思考|想法|思路"),
    ("action", r"action|动作|行动|操作"),
    ("observation", r"observation|观察结果|观察"),
    ("question", r"question|问题"),
)
# Turns the runner writes, not the model: a model that writes one has run past its reply.
_OTHER_TURNS = {"observation": "an Observation", "question": "a Question"}
# Markdown around a label: "**Thought:**", "**Action**:", "> ## Final Answer:". A bold marker after
# the colon is taken only when the line opened with one. No two neighbouring parts may match the
# same characters, or a long run of spaces takes quadratic time to reject.
_BOLD = r"(?:\*\*|__)"
_LABEL_LINE = re.compile(
    rf"^[ \t>#-]*(?:(?P<bold>{_BOLD})[ \t]*)?(?P<label>"
    + "|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _LABELS)
    + rf")[ \t]*(?:{_BOLD}[ \t]*)?[:：][ \t]*(?(bold)(?:{_BOLD}[ \t]*)?)",
    re.IGNORECASE,
)
_CALL_FORM = re.compile(r"^(?P<name>[^\W\d][\w.\-]*)\s*[\[(](?P<arg>.*)[\])]\s*$", re.DOTALL)
_NAME = re.compile(r"^[`\"']?(?P<name>[^\W\d][\w.\-]*)[`\"']?")


@dataclass
class _Section:
    kind: str
    lines: list[str]

    @property
    def text(self) -> str:
        return "\n".join(self.lines).strip()


def tolerant_parts(text: str, tool_names: Sequence[str] = ()) -> ReplyParts:
    preamble, sections = _sections(text)
    notes: list[str] = []
    if sections and sections[0].kind in _OTHER_TURNS and not preamble.strip():
        # A reply may begin by repeating the last Observation (or the Question): its own part follows.
        own = next((i for i, section in enumerate(sections) if section.kind not in _OTHER_TURNS), None)
        if own is not None:
            notes.append(f"ignored {_OTHER_TURNS[sections[0].kind]} at the start of the reply")
            sections = sections[own:]
    cut = next((i for i, section in enumerate(sections) if section.kind in _OTHER_TURNS), None)
    if cut is not None:
        if any(section.text for section in sections[cut:]):
            notes.append(f"dropped {_OTHER_TURNS[sections[cut].kind]} the model wrote itself")
        sections = sections[:cut]
    if not sections:
        # Plain text is the answer; a reply that was only an Observation has no labelled part left.
        answer = preamble.strip() or None
        labelled = answer is None and bool(notes)
        return ReplyParts(None, [], answer, labelled=labelled, tolerant=True, notes=notes)

    thoughts = [section.text for section in sections if section.kind == "thought" and section.text]
    if not thoughts and preamble.strip():
        thoughts = [" ".join(preamble.split())]
    thought = " ".join(" ".join(t.split()) for t in thoughts) or None
    answers = [section.text for section in sections if section.kind == "answer"]
    answer = "\n".join(answers) if answers else None
    actions = _actions(sections, notes, tool_names)
    return ReplyParts(thought=thought, actions=actions, answer=answer, tolerant=True, notes=notes)


def _sections(text: str) -> tuple[str, list[_Section]]:
    preamble: list[str] = []
    sections: list[_Section] = []
    # Only a line feed ends a line: str.splitlines() would also split at \x85 or \u2028 in JSON strings.
    for line in text.replace("\r\n", "\n").split("\n"):
        match = _LABEL_LINE.match(line)
        if match:
            kind = next(kind for kind, _ in _LABELS if match.group(kind))
            sections.append(_Section(kind, [line[match.end() :]]))
        elif sections:
            sections[-1].lines.append(line)
        else:
            preamble.append(line)
    return "\n".join(preamble), sections


def _actions(sections: list[_Section], notes: list[str], tool_names: Sequence[str]) -> list[RawAction]:
    actions: list[RawAction] = []
    for index, section in enumerate(sections):
        if section.kind != "action":
            continue
        following = sections[index + 1] if index + 1 < len(sections) else None
        input_text = following.text if following is not None and following.kind == "input" else None
        action = _read_action(section.text, input_text, tool_names)
        if action is None:
            notes.append(f"ignored an Action line with no tool name: {section.text[:60]!r}")
            continue
        actions.append(action)
    return actions


def _read_action(text: str, input_text: str | None, tool_names: Sequence[str]) -> RawAction | None:
    first_line = text.split("\n", 1)[0].strip()
    call = _CALL_FORM.match(first_line)
    if call:
        return RawAction(call["name"], input_text, inline_argument=call["arg"].strip())
    name = _NAME.match(first_line)
    if name is None:
        return None
    rest = text[name.end() :].strip()
    if input_text is None and rest.startswith("{"):
        return RawAction(name["name"], rest)
    if name["name"] not in tool_names and rest:
        # "Action: write the answer": no tool is named; the model is told so in its own words.
        return RawAction(first_line.strip("`*\"' "), input_text)
    return RawAction(name["name"], input_text)
