"""A calculator tool: arithmetic on a parsed syntax tree, never `eval`."""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from localagent.tools.base import Tool, ToolError

Number = int | float

MAX_EXPRESSION_CHARS = 500
MAX_DEPTH = 40
MAX_INT_BITS = 4000  # about 1200 digits; bigger integers cost time and flood the context
MAX_ROUND_DIGITS = 100

CONSTANTS: dict[str, float] = {"pi": math.pi, "e": math.e, "tau": math.tau}
FUNCTIONS: dict[str, Callable[..., Number]] = {
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
    "sqrt": math.sqrt,
    "exp": math.exp,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "floor": math.floor,
    "ceil": math.ceil,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "degrees": math.degrees,
    "radians": math.radians,
}


def _mean(*values: Number) -> Number:
    return sum(values) / len(values)


# Functions over a list of numbers: sum([8.5, 6.0]) or sum(8.5, 6.0), as a coder model writes them.
LIST_FUNCTIONS: dict[str, Callable[..., Number]] = {
    "sum": lambda *values: sum(values),
    "mean": _mean,
    "average": _mean,
    "avg": _mean,
    "len": lambda *values: len(values),
    "min": min,
    "max": max,
}
BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
SUPPORTED = (
    f"Supported: numbers, + - * / // % ** ( ), {', '.join(CONSTANTS)}, "
    f"{', '.join(dict.fromkeys([*FUNCTIONS, *LIST_FUNCTIONS]))}."
)


Expression = Annotated[str, Field(description="Arithmetic on numbers, written as in Python")]


class NotArithmetic(ToolError):
    """The expression is code, names or text rather than arithmetic on numbers."""


def calculator(expression: Expression) -> str:
    """Calculate an arithmetic expression on numbers and return the result. Use ** for powers."""
    return format_number(evaluate(expression))


def calculator_tool(code_tool: str | None = None) -> Tool:
    """The calculator; given `code_tool`, code written into it (a file's column, a loop) gets one
    line naming that tool, which computes over the files, instead of the calculator's own error."""
    if code_tool is None:
        return Tool.from_function(calculator)

    def arithmetic_only(expression: Expression) -> str:
        try:
            return calculator(expression)
        except NotArithmetic:
            raise ToolError(
                "The calculator takes arithmetic on numbers only, like '(2 + 3) * 4'. "
                f"To compute over the values in a file, use {code_tool}."
            ) from None

    return Tool.from_function(arithmetic_only, name="calculator", description=calculator.__doc__)


def _check_length(text: str) -> None:
    if len(text.strip()) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"The expression is longer than {MAX_EXPRESSION_CHARS} characters. Split it up.")


def evaluate(expression: str, written: str | None = None) -> Number:
    """The value of `expression`; raises ToolError with a message for the model on any problem.
    `written` is what the model wrote, when code put a table's numbers in its place: its length is
    what counts, and an error quotes it rather than the numbers."""
    text = expression.strip().replace("×", "*").replace("÷", "/")
    if not text:
        raise ToolError("The expression is empty. Write one, like '2 + 2'.")
    _check_length(text if written is None else written)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as error:
        quoted = text if written is None else written.strip()
        shown = quoted if len(quoted) <= 60 else quoted[:57] + "..."
        raise NotArithmetic(
            f"Cannot parse {shown!r}: {error.msg}. Write arithmetic like '(2 + 3) * 4'."
        ) from None
    except (RecursionError, MemoryError):
        raise ToolError(f"The expression is nested too deeply (the limit is {MAX_DEPTH} levels).") from None
    try:
        return _checked(_evaluate(tree.body, 0))
    except ZeroDivisionError:
        raise ToolError("Division by zero.") from None
    except OverflowError:
        raise ToolError("The result is too large.") from None
    except (ValueError, TypeError) as error:
        raise ToolError(f"Math error: {error}.") from None


def format_number(value: Number) -> str:
    if isinstance(value, float):
        # 15 significant digits hide binary rounding noise: 0.1 + 0.2 gives 0.3, not 0.30000000000000004.
        return repr(float(f"{value:.15g}"))
    return str(value)


def _evaluate(node: ast.expr, depth: int) -> Number:
    if depth > MAX_DEPTH:
        raise ToolError(f"The expression is nested too deeply (the limit is {MAX_DEPTH} levels).")
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, int | float):
            raise NotArithmetic(f"{node.value!r} is not a number. {SUPPORTED}")
        return _checked(node.value)
    if isinstance(node, ast.Name):
        if node.id not in CONSTANTS:
            raise NotArithmetic(
                f"Unknown name {node.id!r}: the calculator only knows numbers. Read the numbers first "
                "(from a file, say), then write them into the expression."
            )
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY:
        return UNARY[type(node.op)](_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in BINARY:
        left, right = _evaluate(node.left, depth + 1), _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Pow):
            _check_power(left, right)
        return _checked(BINARY[type(node.op)](left, right))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitXor):
        raise ToolError("'^' is not supported. Use ** for powers, like 2 ** 10.")
    if isinstance(node, ast.Call):
        return _call(node, depth)
    problem = ToolError if isinstance(node, ast.Tuple | ast.List) else NotArithmetic
    raise problem(f"{_describe(node)} {SUPPORTED}")


def _call(node: ast.Call, depth: int) -> Number:
    if not isinstance(node.func, ast.Name):
        raise NotArithmetic(f"Only functions called by a plain name can be used, like sqrt(2). {SUPPORTED}")
    name = node.func.id
    known = dict.fromkeys([*FUNCTIONS, *LIST_FUNCTIONS])
    if name not in known:
        raise NotArithmetic(f"Unknown function {name!r}. The functions are: {', '.join(known)}.")
    if node.keywords or any(isinstance(arg, ast.Starred) for arg in node.args):
        raise ToolError(f"{name}() takes plain numbers only, like {name}(2.5).")
    if name in LIST_FUNCTIONS:
        return _call_on_list(name, node.args, depth)
    args = [_evaluate(arg, depth + 1) for arg in node.args]
    if (
        name == "round"
        and len(args) == 2
        and (not isinstance(args[1], int) or abs(args[1]) > MAX_ROUND_DIGITS)
    ):
        raise ToolError(
            f"round() takes a whole number of digits between -{MAX_ROUND_DIGITS} and {MAX_ROUND_DIGITS}."
        )
    try:
        return _checked(FUNCTIONS[name](*args))
    except TypeError:
        raise ToolError(f"Wrong number of arguments for {name}().") from None
    except ValueError:
        shown = ", ".join(format_number(arg) for arg in args)
        raise ToolError(f"{name}({shown}) is not defined (math domain error).") from None


def _call_on_list(name: str, nodes: list[ast.expr], depth: int) -> Number:
    """sum, mean, len, min or max of numbers given one by one or as one list."""
    if len(nodes) == 1 and isinstance(nodes[0], ast.List | ast.Tuple):
        nodes = list(nodes[0].elts)
    values = [_evaluate(item, depth + 1) for item in nodes]
    if not values:
        raise ToolError(f"{name}() needs at least one number.")
    return _checked(LIST_FUNCTIONS[name](*values))


def _check_power(base: Number, exponent: Number) -> None:
    """Refuse powers whose result would take long to compute: 9 ** 9 ** 9 has 370 million digits."""
    if abs(base) <= 1 or exponent <= 0:
        return
    if exponent * math.log2(abs(base)) > MAX_INT_BITS:
        raise ToolError("The result is too large.")


def _checked(value: object) -> Number:
    if isinstance(value, complex):
        raise ToolError("The result is not a real number (like a fractional power of a negative number).")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise ToolError("The result is too large.")
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError("The result is too large (or not a number).")
    if not isinstance(value, int | float):
        raise ToolError(f"The result {value!r} is not a number.")
    return value


def _describe(node: ast.AST) -> str:
    """What is wrong with an unsupported piece of syntax, in words a model can act on."""
    if isinstance(node, ast.Attribute):
        return "Attribute access (a.b) is not allowed."
    if isinstance(node, ast.Compare):
        return "Comparisons are not supported."
    if isinstance(node, ast.Tuple):
        return "Commas are only allowed between function arguments; write 1000, not 1,000."
    if isinstance(node, ast.List):
        return "A list needs a function around it, like sum([1, 2]) or mean([1, 2])."
    return f"This kind of expression ({type(node).__name__}) is not supported."
