"""Berkeley Function Calling Leaderboard (BFCL v3) data: questions, function specs and accepted answers.

The files are JSON Lines. Function `parameters` are almost JSON Schema; `bfcl_to_json_schema` turns them
into the real thing. An answer lists, for each argument, every accepted value; `""` marks an argument
that may be left out, and a nested object lists accepted values per key in the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema

from localagent.schema_grammar.dialect import from_gorilla_dialect
from localagent.tools.spec import ToolSpec


@dataclass(frozen=True)
class BfclFunction:
    name: str
    description: str
    parameters: dict[str, Any]  # as written in BFCL; see bfcl_to_json_schema

    def spec(self) -> ToolSpec:
        """The function as a tool the model is offered, with its parameters as real JSON Schema."""
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)


@dataclass(frozen=True)
class BfclQuestion:
    id: str
    turns: list[list[dict[str, str]]]
    functions: list[BfclFunction]


# One expected call: the function name and, for each argument, the accepted values.
BfclCall = tuple[str, dict[str, list[Any]]]


def load_questions(path: Path | str) -> list[BfclQuestion]:
    """The questions of one BFCL file; ValueError naming the line when a record is not a question."""
    questions = []
    for number, record in _json_lines(path):
        try:
            functions = [
                BfclFunction(f["name"], f.get("description", ""), f.get("parameters", {}))
                for f in record["function"]
            ]
            questions.append(BfclQuestion(record["id"], record["question"], functions))
        except (KeyError, TypeError, AttributeError):
            raise ValueError(f"{Path(path).name}, line {number}: not a BFCL question") from None
    return questions


def load_answers(path: Path | str) -> dict[str, list[BfclCall]]:
    """Question id -> the expected calls (in any order, for the parallel categories)."""
    answers = {}
    for number, record in _json_lines(path):
        try:
            answers[record["id"]] = [
                (name, arguments) for call in record["ground_truth"] for name, arguments in call.items()
            ]
        except (KeyError, TypeError, AttributeError):
            raise ValueError(f"{Path(path).name}, line {number}: not a BFCL answer") from None
    return answers


def _json_lines(path: Path | str) -> list[tuple[int, Any]]:
    """(line number, record) for each non-blank line; ValueError naming the line that is not JSON."""
    records = []
    with Path(path).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                records.append((number, json.loads(line)))
            except json.JSONDecodeError as error:
                raise ValueError(f"{Path(path).name}, line {number}: not valid JSON ({error.msg})") from None
    return records


def bfcl_to_json_schema(parameters: Any) -> Any:
    """BFCL's near-JSON-schema as JSON Schema: dict -> object, float -> number, tuple -> array, any -> no
    type, in every subschema; the non-standard `optional` flag is dropped (`required` decides)."""
    return from_gorilla_dialect(parameters).schema


def representative_arguments(schema: dict[str, Any], accepted: dict[str, list[Any]]) -> dict[str, Any]:
    """One argument object the answer key accepts, in the schema's property order.

    Each argument takes its first accepted value that is valid for the argument's schema; failing that
    (or when the schema has no such property) it is left out if `""` is accepted, else it takes the
    first accepted value anyway.
    """
    properties = schema.get("properties", {})
    order = {name: index for index, name in enumerate(properties)}
    chosen = {}
    for name in sorted(accepted, key=lambda n: order.get(n, len(order))):
        sub = properties.get(name, {})
        values = [_choice(sub, v) for v in accepted[name] if v != ""]
        valid = [v for v in values if _valid(sub, v)] if name in properties else []
        if valid:
            chosen[name] = valid[0]
        elif values and "" not in accepted[name]:
            chosen[name] = values[0]
    return chosen


def _choice(schema: Any, value: Any) -> Any:
    """Objects inside an answer (also inside arrays) list accepted values per key, like the top level."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict) and all(isinstance(v, list) for v in value.values()):
        return representative_arguments(schema, value)
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_choice(schema["items"], item) for item in value]
    return value


def _valid(schema: Any, value: Any) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value) if isinstance(schema, dict) else True
