"""What a model is told about a tool: its name, description and JSON schema."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import jsonschema
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError, field_validator, model_validator

from localagent.schema_grammar.compiler import SchemaGrammarError, schema_rules
from localagent.schema_grammar.dialect import describe_dialect, from_gorilla_dialect
from localagent.schema_grammar.keywords import pointer

TOOL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]{0,63}$")


class ToolSpec(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    description: str = ""
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # A narrower schema for the grammar only (paths that exist, say); the model is shown, and the
    # arguments are validated against, `parameters`.
    grammar_parameters: dict[str, Any] | None = None
    _dialect: tuple[str, ...] = PrivateAttr(default=())

    @property
    def grammar_schema(self) -> dict[str, Any]:
        return self.grammar_parameters if self.grammar_parameters is not None else self.parameters

    @model_validator(mode="wrap")
    @classmethod
    def _read_dialect(cls, data: Any, handler: Any) -> ToolSpec:
        """Gorilla/BFCL type names in the schemas become JSON Schema; `dialect` says which were read."""
        mapped: list[str] = []
        if isinstance(data, dict):
            data = dict(data)
            for key in ("parameters", "grammar_parameters"):
                if key in data:
                    reading = from_gorilla_dialect(data[key])
                    data[key] = reading.schema
                    mapped += [name for name in reading.mapped if name not in mapped]
        spec = handler(data)
        spec._dialect = tuple(mapped)
        return spec

    @property
    def dialect(self) -> tuple[str, ...]:
        """The Gorilla/BFCL type names read as JSON Schema, as "dict→object"; empty for plain JSON Schema."""
        return self._dialect

    @field_validator("name")
    @classmethod
    def _valid_name(cls, name: str) -> str:
        if not TOOL_NAME.match(name):
            raise ValueError(
                f"tool name {name!r} must start with a letter or _, use only letters, digits, _ . -, "
                "and be at most 64 characters long"
            )
        return name

    @classmethod
    def from_openai(cls, item: dict[str, Any]) -> ToolSpec:
        """Accept `{"type": "function", "function": {...}}` or the bare function object.

        Raises ValueError with a one-line reason when the item is neither.
        """
        function = item.get("function", item) if item.get("type", "function") == "function" else item
        if not isinstance(function, dict):
            raise ValueError("`function` must be an object with a `name`")
        if "name" not in function:
            raise ValueError("the function has no `name`")
        parameters = function.get("parameters")
        try:
            return cls(
                name=function["name"],
                description=function.get("description", ""),
                parameters={"type": "object", "properties": {}} if parameters is None else parameters,
            )
        except ValidationError as error:
            raise ValueError(describe_spec_error(error)) from None

    def to_openai(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def compact_schema(self) -> str:
        return json.dumps(self.parameters, separators=(",", ":"), ensure_ascii=False)


def describe_spec_error(error: ValidationError) -> str:
    """A ToolSpec's validation error in one line."""
    problems = []
    for item in error.errors(include_url=False):
        field = ".".join(str(part) for part in item["loc"])
        message = item["msg"].removeprefix("Value error, ")
        if field == "parameters":
            message = f"must be a JSON object (a JSON Schema), not {json.dumps(item['input'])[:40]}"
        problems.append(message if field == "name" else f"`{field}` {message}")
    return "; ".join(problems)


def schema_problem(spec: ToolSpec) -> str | None:
    """Why the tool's schema cannot serve, in one line starting with its JSON pointer; None if it can.

    It serves when the argument grammar can be built (the arguments are an object that fits it) and a
    validator can read it (parsed arguments are validated against it).
    """
    try:
        schema_rules(spec.grammar_schema, "t", root_type="object")
    except SchemaGrammarError as error:
        return str(error)
    validator = jsonschema.validators.validator_for(spec.parameters, default=jsonschema.Draft202012Validator)
    try:
        validator.check_schema(spec.parameters)
    except jsonschema.SchemaError as error:
        where = "".join(f"/{pointer(str(part))}" for part in error.absolute_path)
        return f"#{where}: {error.message.splitlines()[0]}"
    return None


def load_tool_specs(text: str) -> list[ToolSpec]:
    """Read a JSON list of OpenAI-style function specs, each with a schema that can serve.

    Raises ValueError with a one-line reason naming the item, the tool and the JSON pointer.
    """
    try:
        items = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON: {error}") from None
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise ValueError("expected a JSON list of function specs")
    specs = []
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"item {position} is not an object")
        try:
            spec = ToolSpec.from_openai(item)
        except ValueError as error:
            raise ValueError(f"item {position}: {error}") from None
        problem = schema_problem(spec)
        if problem is not None:
            raise ValueError(f"item {position}: tool {spec.name!r}: {problem}")
        specs.append(spec)
    return specs


def dialect_note(specs: Sequence[ToolSpec]) -> str | None:
    """One display line when some tool's schema was read from the Gorilla/BFCL dialect."""
    mapped = {name for spec in specs for name in spec.dialect}
    return describe_dialect(mapped) if mapped else None
