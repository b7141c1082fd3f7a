"""A tool: its spec, the validator built from the same schema, and the function that runs it."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints

import jsonschema
from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from localagent.core.cancel import CancelToken
from localagent.tools.spec import ToolSpec


class ToolError(Exception):
    """Raised by a tool to report a failure the model should read; its message is shown as is."""


class InvalidArguments(Exception):
    """The arguments do not match the tool's schema; the message lists each field's problem."""


@dataclass(frozen=True)
class Tool:
    spec: ToolSpec
    validate: Callable[[dict[str, Any]], Any]
    invoke: Callable[[Any, CancelToken], Any]
    changes_files: bool = False
    # The schema the grammar should use for the next turn, given the question the run answers, when
    # it is narrower than the spec's: read_file's path limited to the files that exist now, a query
    # to the tables' own columns. None: the spec's own.
    narrow: Callable[[str], dict[str, Any] | None] | None = None
    # What to add when the model makes the same call again, given its arguments and earlier result:
    # more than it saw the first time, since seeing the same again rarely changes its next step.
    on_repeat: Callable[[dict[str, Any], str], str | None] | None = None
    # For a tool that changes files: raises ToolError when the call could not apply as written (its
    # text not in the file, say), so it is refused before anyone is asked to approve it.
    dry_run: Callable[[dict[str, Any]], None] | None = None
    # Whether a run that answers this question is offered the tool at all; None: always. A tool a
    # small model reaches for where it does not fit (SQL for a question about a note) waits for its cue.
    offered_for: Callable[[str], bool] | None = None

    def offered(self, question: str) -> bool:
        return self.offered_for is None or self.offered_for(question)

    @property
    def name(self) -> str:
        return self.spec.name

    def turn_spec(self, question: str = "") -> ToolSpec:
        """The spec for the next turn, with the narrower grammar schema when there is one."""
        narrowed = self.narrow(question) if self.narrow is not None else None
        return (
            self.spec if narrowed is None else self.spec.model_copy(update={"grammar_parameters": narrowed})
        )

    def run(self, arguments: dict[str, Any], cancel: CancelToken) -> str:
        """Validate and run; raises InvalidArguments, ToolError or whatever the function raises."""
        result = self.invoke(self.validate(arguments), cancel)
        if isinstance(result, str):
            return result
        if isinstance(result, BaseModel):
            return result.model_dump_json()
        return json.dumps(result, ensure_ascii=False, default=str)

    @classmethod
    def from_model(
        cls,
        model: type[BaseModel],
        function: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        changes_files: bool = False,
    ) -> Tool:
        """A tool whose arguments are `model`; `function(args)` runs it, or else `args.run()`."""
        if function is None:
            if not callable(getattr(model, "run", None)):
                raise TypeError(f"{model.__name__} has no run() method and no function was given")
            run = model.run  # type: ignore[attr-defined]
            takes_cancel = "cancel" in inspect.signature(run).parameters
        else:
            run = function
            takes_cancel = "cancel" in inspect.signature(function).parameters

        def invoke(arguments: BaseModel, cancel: CancelToken) -> Any:
            return run(arguments, cancel=cancel) if takes_cancel else run(arguments)

        spec = ToolSpec(
            name=name or _snake_case(model.__name__),
            description=description or _first_paragraph(model.__doc__),
            parameters=schema_of(model),
        )
        return cls(spec, pydantic_validator(model), invoke, changes_files)

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        changes_files: bool = False,
        check: Callable[[Any], None] | None = None,
    ) -> Tool:
        """A tool from a typed function; a parameter named `cancel` receives the run's CancelToken.

        `check(arguments)` may refuse valid-typed arguments with InvalidArguments; it runs with the
        validation, so before anyone is asked to approve the call.
        """
        model = arguments_model(function)
        takes_cancel = "cancel" in inspect.signature(function).parameters

        def invoke(arguments: BaseModel, cancel: CancelToken) -> Any:
            values = {field: getattr(arguments, field) for field in type(arguments).model_fields}
            return function(**values, cancel=cancel) if takes_cancel else function(**values)

        spec = ToolSpec(
            name=name or function.__name__,
            description=description or _first_paragraph(function.__doc__),
            parameters=schema_of(model),
        )
        return cls(spec, pydantic_validator(model, check), invoke, changes_files)

    @classmethod
    def from_spec(cls, spec: ToolSpec, function: Callable[..., Any]) -> Tool:
        """A tool from a hand-written JSON schema, validated with jsonschema; `function(**arguments)`."""
        validator = jsonschema_validator(spec.parameters)

        def invoke(arguments: dict[str, Any], cancel: CancelToken) -> Any:
            return function(**arguments)

        return cls(spec, validator, invoke)


def arguments_model(function: Callable[..., Any]) -> type[BaseModel]:
    hints = get_type_hints(function, include_extras=True)
    fields: dict[str, Any] = {}
    for parameter in inspect.signature(function).parameters.values():
        if parameter.name == "cancel":
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{function.__name__}: *args and **kwargs cannot be tool arguments")
        if parameter.name not in hints:
            raise TypeError(f"{function.__name__}: parameter {parameter.name!r} needs a type hint")
        default = ... if parameter.default is parameter.empty else parameter.default
        fields[parameter.name] = (hints[parameter.name], default)
    config = ConfigDict(extra="forbid")
    return create_model(f"{function.__name__}_arguments", __config__=config, **fields)


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema without the `title` noise, so prompts stay short."""
    return drop_titles(model.model_json_schema())


def drop_titles(node: Any) -> Any:
    """A JSON schema without the `title` of each part: noise in a small model's prompt."""
    if isinstance(node, list):
        return [drop_titles(item) for item in node]
    if not isinstance(node, dict):
        return node
    cleaned = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs"):
            # Keys here are names chosen by the tool author, possibly "title" itself.
            cleaned[key] = {name: drop_titles(sub) for name, sub in value.items()}
        else:
            cleaned[key] = drop_titles(value)
    return cleaned


def pydantic_validator(
    model: type[BaseModel], check: Callable[[Any], None] | None = None
) -> Callable[[dict[str, Any]], BaseModel]:
    def validate(arguments: dict[str, Any]) -> BaseModel:
        try:
            valid = model.model_validate(arguments)
        except ValidationError as error:
            raise InvalidArguments(describe_validation_error(error)) from None
        if check is not None:
            check(valid)
        return valid

    return validate


def jsonschema_validator(schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    validator_class = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = validator_class(schema)

    def validate(arguments: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(validator.iter_errors(arguments), key=lambda error: list(error.path))
        if errors:
            raise InvalidArguments(
                "; ".join(f"{_json_path(error.absolute_path)}: {error.message}" for error in errors)
            )
        return arguments

    return validate


def describe_validation_error(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"]) or "arguments"
        problems.append(f"{where}: {item['msg']}")
    return "; ".join(problems)


def _json_path(path: Any) -> str:
    parts = [str(part) for part in path]
    return ".".join(parts) if parts else "arguments"


def _first_paragraph(doc: str | None) -> str:
    if not doc:
        return ""
    return inspect.cleandoc(doc).split("\n\n")[0].replace("\n", " ").strip()


def _snake_case(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
