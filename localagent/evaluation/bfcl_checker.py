"""BFCL's AST checker, reimplemented: is a reply's list of function calls right for a question?

The rules follow the Python-language path of ShishirPatil/gorilla,
`berkeley-function-call-leaderboard/bfcl_eval/eval_checker/ast_eval/ast_checker.py`
(`simple_function_checker`, `type_checker`, `standardize_string`, `string_checker`, `list_checker`,
`dict_checker`, `list_dict_checker`, `multiple_function_checker`, `parallel_function_checker_no_order`)
and, for irrelevance, `relevance_file_runner` in `bfcl_eval/eval_checker/eval_runner.py`:

- the call names the expected function; every `required` parameter is present; every argument is a
  parameter of the function and appears in the answer key; every answer-key argument without `""`
  among its accepted values is present;
- a value must have the parameter's Python type (an int passes for a float, at the top level only;
  array items are type-checked one level deep), then be among the accepted values: strings after
  `standardize_string`, lists element-wise with strings standardized, dicts key by key (one level),
  lists of dicts dict by dict; when the answer key gives a value of another type than the schema
  (BFCL's "variable" case) the raw values are compared;
- the number of calls equals the number expected, and the calls match the expected ones one-to-one in
  any order. BFCL matches greedily in answer order; a full bipartite matching is used here, which
  differs only when a call could match two expected ones;
- for irrelevance the reply is right when it holds no call (a reply that decodes to no call counts).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from localagent.evaluation.bfcl_functions import BfclCall, BfclFunction

# One call from a reply: the function name and its arguments.
ModelCall = tuple[str, dict[str, Any]]

_PYTHON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
_IGNORED_IN_STRINGS = re.compile(r"[ ,./\-_*^]")


@dataclass(frozen=True)
class Verdict:
    correct: bool
    reason: str = ""


RIGHT = Verdict(True)


def standardize_string(text: str) -> str:
    """BFCL's string normal form: no spaces or `,./-_*^`, lower case, single quotes as double quotes."""
    return _IGNORED_IN_STRINGS.sub("", text).lower().replace("'", '"')


def expected_function(functions: Sequence[BfclFunction], name: str) -> BfclFunction | None:
    """The function an answer-key entry names; the key sometimes drops a dotted name's prefix."""
    for function in functions:
        if function.name == name:
            return function
    suffixed = [function for function in functions if function.name.endswith(f".{name}")]
    return suffixed[0] if len(suffixed) == 1 else None


def check_reply(
    category: str, functions: Sequence[BfclFunction], expected: Sequence[BfclCall], calls: Sequence[ModelCall]
) -> Verdict:
    """Score the calls a reply made against the answer key of one question."""
    if category == "irrelevance":
        return RIGHT if not calls else Verdict(False, f"called {calls[0][0]} although no function fits")
    if len(calls) != len(expected):
        return Verdict(False, f"expected {len(expected)} call(s), got {len(calls)}")
    verdicts = [
        [_check_expected(functions, name, accepted, call) for call in calls] for name, accepted in expected
    ]
    unmatched = _unmatched(verdicts)
    if unmatched is None:
        return RIGHT
    if len(expected) == 1:
        return verdicts[0][0]
    reasons = [verdict.reason for verdict in verdicts[unmatched]]
    named = [r for r in reasons if not r.startswith("called ")]
    return Verdict(False, f"no call matches expected call {unmatched + 1}: {(named or reasons)[0]}")


def _check_expected(
    functions: Sequence[BfclFunction], name: str, accepted: dict[str, list[Any]], call: ModelCall
) -> Verdict:
    function = expected_function(functions, name)
    if function is None:
        return Verdict(False, f"the answer key names {name}, which is not among the functions")
    return check_call(function, accepted, call)


def _unmatched(verdicts: list[list[Verdict]]) -> int | None:
    """The first expected call left without a reply call in a maximum one-to-one matching, or None."""
    owner: dict[int, int] = {}  # reply call -> expected call

    def assign(expected: int, seen: set[int]) -> bool:
        for call, verdict in enumerate(verdicts[expected]):
            if verdict.correct and call not in seen:
                seen.add(call)
                if call not in owner or assign(owner[call], seen):
                    owner[call] = expected
                    return True
        return False

    for expected in range(len(verdicts)):
        if not assign(expected, set()):
            return expected
    return None


def check_call(function: BfclFunction, accepted: dict[str, list[Any]], call: ModelCall) -> Verdict:
    """One call against one expected call (BFCL's simple_function_checker)."""
    name, arguments = call
    if name != function.name:
        return Verdict(False, f"called {name}, expected {function.name}")
    properties = function.parameters.get("properties", {})
    for parameter in function.parameters.get("required", []):
        if parameter not in arguments:
            return Verdict(False, f"missing required argument {parameter!r}")
    for parameter, value in arguments.items():
        if parameter not in properties or parameter not in accepted:
            return Verdict(False, f"unexpected argument {parameter!r}")
        problem = value_problem(properties[parameter], value, accepted[parameter])
        if problem:
            return Verdict(False, f"argument {parameter!r}: {problem}")
    for parameter, values in accepted.items():
        if parameter not in arguments and "" not in values:
            return Verdict(False, f"missing argument {parameter!r}, which the answer needs")
    return RIGHT


def value_problem(schema: dict[str, Any], value: Any, accepted: list[Any]) -> str | None:
    """Why `value` is not accepted for a parameter with this BFCL schema, or None when it is."""
    kind = schema.get("type")
    python_type = _PYTHON_TYPES.get(kind) if isinstance(kind, str) else None
    if kind == "float" and type(value) is int:
        value = float(value)
    answer_type = next((type(option) for option in accepted if option != ""), None)
    literal = False  # whether the answer key holds values of the schema's type, compared BFCL's way
    if python_type is None or type(value) is python_type:
        if not _items_typed(schema, value, accepted):
            return f"{value!r} has array items of the wrong type"
        literal = python_type is not None and answer_type in (None, python_type)
    elif type(value) is not answer_type:
        return f"expected {kind}, got {type(value).__name__} {value!r}"
    if not literal:
        ok = value in accepted
    elif python_type is dict:
        ok = any(_dict_accepted(value, option) for option in accepted if isinstance(option, dict))
    elif python_type is list and _item_type(schema) is dict:
        ok = any(_dict_list_accepted(value, option) for option in accepted if isinstance(option, list))
    elif python_type is str:
        ok = standardize_string(value) in [standardize_string(o) for o in accepted if isinstance(o, str)]
    elif python_type is list:
        ok = _standardized(value) in [_standardized(o) for o in accepted if isinstance(o, list)]
    else:
        ok = value in accepted
    return None if ok else f"{value!r} is not among the accepted values {accepted!r}"


def _item_type(schema: dict[str, Any]) -> type | None:
    items = schema.get("items")
    kind = items.get("type") if isinstance(items, dict) else None
    return _PYTHON_TYPES.get(kind) if isinstance(kind, str) else None


def _items_typed(schema: dict[str, Any], value: Any, accepted: list[Any]) -> bool:
    """Array items must have the item type, or the type of an accepted list's items (one level deep)."""
    if schema.get("type") not in ("array", "tuple") or not isinstance(value, list):
        return True
    item_type = _item_type(schema)
    for option in accepted:
        if not isinstance(option, list):
            return True  # BFCL skips the check against an optional marker
        option_type = next((type(item) for item in option if item != ""), None)
        if all(type(item) in (item_type, option_type) for item in value):
            return True
    return False


def _standardized(values: list[Any]) -> list[Any]:
    return [standardize_string(item) if isinstance(item, str) else item for item in values]


def _dict_accepted(value: dict[str, Any], option: dict[str, list[Any]]) -> bool:
    for key, item in value.items():
        if key not in option:
            return False
        wanted = option[key] if isinstance(option[key], list) else [option[key]]
        if (standardize_string(item) if isinstance(item, str) else item) not in _standardized(wanted):
            return False
    return all(key in value or "" in values for key, values in option.items())


def _dict_list_accepted(value: list[Any], option: list[Any]) -> bool:
    return len(value) == len(option) and all(
        isinstance(item, dict) and isinstance(wanted, dict) and _dict_accepted(item, wanted)
        for item, wanted in zip(value, option, strict=True)
    )
