"""Demo MCP server "units": unit conversion and a safe arithmetic calculator.

Run it with ``python -m toolscout.demo.units [--transport stdio|http|sse]``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from toolscout.demo._serve import serve, tool_doc

Dimension = Literal["length", "mass", "temperature", "time", "data"]

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


@dataclass(frozen=True)
class _Unit:
    symbol: str
    name: str
    dimension: Dimension
    factor: float  # size in the dimension's base unit; unused for temperature, which has offsets
    aliases: tuple[str, ...] = ()


_UNITS = [
    _Unit("m", "meter", "length", 1.0, ("meters", "metre", "metres")),
    _Unit("km", "kilometer", "length", 1000.0, ("kilometers", "kilometre", "kilometres")),
    _Unit("cm", "centimeter", "length", 0.01, ("centimeters", "centimetre", "centimetres")),
    _Unit("mm", "millimeter", "length", 0.001, ("millimeters", "millimetre", "millimetres")),
    _Unit("mi", "mile", "length", 1609.344, ("miles",)),
    _Unit("yd", "yard", "length", 0.9144, ("yards", "yds")),
    _Unit("ft", "foot", "length", 0.3048, ("feet", "'")),
    _Unit("in", "inch", "length", 0.0254, ("inches", '"')),
    _Unit("kg", "kilogram", "mass", 1.0, ("kilograms", "kgs", "kilo", "kilos")),
    _Unit("g", "gram", "mass", 0.001, ("grams",)),
    _Unit("lb", "pound", "mass", 0.45359237, ("pounds", "lbs")),
    _Unit("oz", "ounce", "mass", 0.028349523125, ("ounces",)),
    _Unit("C", "degree Celsius", "temperature", 1.0, ("°c", "celsius", "degc", "centigrade")),
    _Unit("F", "degree Fahrenheit", "temperature", 1.0, ("°f", "fahrenheit", "degf")),
    _Unit("K", "kelvin", "temperature", 1.0, ("kelvins", "°k")),
    _Unit("s", "second", "time", 1.0, ("sec", "secs", "seconds")),
    _Unit("min", "minute", "time", 60.0, ("mins", "minutes")),
    _Unit("h", "hour", "time", 3600.0, ("hr", "hrs", "hours")),
    _Unit("day", "day", "time", 86400.0, ("d", "days")),
    _Unit("B", "byte", "data", 1.0, ("bytes",)),
    _Unit("KB", "kilobyte (1000 B)", "data", 1e3, ("kilobytes",)),
    _Unit("MB", "megabyte (1000² B)", "data", 1e6, ("megabytes",)),
    _Unit("GB", "gigabyte (1000³ B)", "data", 1e9, ("gigabytes",)),
    _Unit("KiB", "kibibyte (1024 B)", "data", 1024.0, ("kibibytes",)),
    _Unit("MiB", "mebibyte (1024² B)", "data", 1024.0**2, ("mebibytes",)),
    _Unit("GiB", "gibibyte (1024³ B)", "data", 1024.0**3, ("gibibytes",)),
]
# Every spelling is lower-cased, so "KM", "Miles" and "°C" all resolve.
_LOOKUP = {alias.lower(): u for u in _UNITS for alias in (u.symbol, u.name, *u.aliases)}
_DIMENSIONS: tuple[Dimension, ...] = ("length", "mass", "temperature", "time", "data")

_TO_CELSIUS: dict[str, Callable[[float], float]] = {
    "C": lambda v: v,
    "F": lambda v: (v - 32) * 5 / 9,
    "K": lambda v: v - 273.15,
}
_FROM_CELSIUS: dict[str, Callable[[float], float]] = {
    "C": lambda c: c,
    "F": lambda c: c * 9 / 5 + 32,
    "K": lambda c: c + 273.15,
}


def _symbols(dimension: Dimension) -> str:
    return ", ".join(u.symbol for u in _UNITS if u.dimension == dimension)


def _unit(text: str) -> _Unit:
    unit = _LOOKUP.get(text.strip().lower().removesuffix("."))
    if unit is None:
        known = "; ".join(f"{d}: {_symbols(d)}" for d in _DIMENSIONS)
        raise ToolError(f"Unknown unit {text!r}. Supported units are {known} (full names and plurals work too).")
    return unit


def _tidy(x: float) -> float:
    # 12 significant digits hides binary floating-point noise such as 0.30000000000000004.
    return float(f"{x:.12g}")


class Conversion(BaseModel):
    """The result of convert_units."""

    value: float = Field(description="The input value.")
    from_unit: str = Field(description="Canonical symbol of the source unit.")
    to_unit: str = Field(description="Canonical symbol of the target unit.")
    result: float = Field(description="The converted value, rounded to 12 significant digits.")
    dimension: Dimension = Field(description="The quantity both units measure.")
    text: str = Field(description='Human-readable summary, e.g. "26.2 mi = 42.1648128 km".')


class UnitInfo(BaseModel):
    """One supported unit."""

    symbol: str = Field(description="Canonical symbol, as used in results.")
    name: str = Field(description="Full name.")
    aliases: list[str] = Field(description="Other accepted spellings (case-insensitive).")


class DimensionUnits(BaseModel):
    """The units of one dimension; any two of them convert into each other."""

    dimension: Dimension = Field(description="The quantity measured.")
    units: list[UnitInfo] = Field(description="Supported units of this dimension.")


class UnitListing(BaseModel):
    """The result of list_units."""

    dimensions: list[DimensionUnits] = Field(description="Supported units grouped by dimension.")


class Calculation(BaseModel):
    """The result of calculate."""

    expression: str = Field(description="The expression as given.")
    result: int | float = Field(description="The value; integers stay exact.")


# Functions are looked up by name with their allowed positional-argument counts (min, max).
_FUNCTIONS: dict[str, tuple[Callable[..., Any], int, int]] = {
    "sqrt": (math.sqrt, 1, 1),
    "abs": (abs, 1, 1),
    "round": (round, 1, 2),
    "min": (min, 2, 64),
    "max": (max, 2, 64),
    "log": (math.log, 1, 2),
    "sin": (math.sin, 1, 1),
    "cos": (math.cos, 1, 1),
    "tan": (math.tan, 1, 1),
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
_MAX_EXPRESSION = 500
_MAX_RESULT_BITS = 4096  # about 1,233 decimal digits; stops 9**9**9 from hanging the server


def _power(base: int | float, exponent: int | float) -> int | float:
    # Only int ** int is exact and unbounded; floats overflow quickly and raise OverflowError instead.
    exact = isinstance(base, int) and isinstance(exponent, int) and abs(base) > 1
    if exact and (exponent > _MAX_RESULT_BITS or exponent * math.log2(abs(base)) > _MAX_RESULT_BITS):
        raise ToolError(f"pow({base}, {exponent}) is too large; results are limited to {_MAX_RESULT_BITS} bits.")
    result: Any = base**exponent
    if isinstance(result, complex):  # e.g. (-8) ** (1/3)
        raise ToolError(f"pow({base}, {exponent}) has no real result.")
    return result


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: _power,
}


def _evaluate(node: ast.AST) -> int | float:
    match node:
        case ast.Constant(value=bool()) | ast.Constant(value=complex()):
            raise ToolError("Only real numbers are allowed.")
        case ast.Constant(value=int() | float() as number):
            return number
        case ast.Name(id=name) if name in _CONSTANTS:
            return _CONSTANTS[name]
        case ast.UnaryOp(op=ast.USub(), operand=operand):
            return -_evaluate(operand)
        case ast.UnaryOp(op=ast.UAdd(), operand=operand):
            return +_evaluate(operand)
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _BINARY:
            lhs, rhs = _evaluate(left), _evaluate(right)
            result = _BINARY[type(op)](lhs, rhs)
            # Every exact result, not only a power's: thirty powers at the limit multiplied made a
            # 38,000-bit integer, a JSON number the client could not read, so the call never ended.
            if isinstance(result, int) and result.bit_length() > _MAX_RESULT_BITS:
                raise ToolError(
                    f"The result of {ast.unparse(node)[:80]!r} is too large; results are limited to "
                    f"{_MAX_RESULT_BITS} bits (about 1,233 digits)."
                )
            return result
        case ast.Call(func=ast.Name(id=name), args=args, keywords=[]) if name in _FUNCTIONS:
            fn, least, most = _FUNCTIONS[name]
            if not least <= len(args) <= most:
                wanted = str(least) if least == most else f"{least} to {most}"
                raise ToolError(f"{name}() takes {wanted} arguments, got {len(args)}.")
            return fn(*(_evaluate(a) for a in args))
        case ast.Name(id=name):
            raise ToolError(f"Unknown name {name!r}. Constants: pi, e. Functions: {', '.join(_FUNCTIONS)}.")
        case _:
            raise ToolError(
                f"Unsupported syntax {ast.unparse(node)!r}: use numbers, + - * / // % **, parentheses, "
                f"the constants pi and e, and the functions {', '.join(_FUNCTIONS)}."
            )


def build_server() -> MCPServer[Any]:
    """Create the units server."""
    mcp: MCPServer[Any] = MCPServer(
        "units",
        instructions="Converts values between units of length, mass, temperature, time and data size, "
        "and evaluates arithmetic expressions exactly instead of guessing.",
        version="0.1.0",
    )

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def convert_units(
        value: Annotated[float, Field(description="The number to convert, e.g. 26.2.")],
        from_unit: Annotated[str, Field(description='Unit of value: a symbol or name, e.g. "mi", "miles", "°F".')],
        to_unit: Annotated[str, Field(description='Unit to convert to, of the same dimension, e.g. "km".')],
    ) -> Conversion:
        """Convert a value from one unit to another unit of the same dimension.

        Supports length (m, km, cm, mm, mi, yd, ft, in), mass (kg, g, lb, oz), temperature
        (C, F, K), time (s, min, h, day) and data size (B, KB, MB, GB decimal; KiB, MiB, GiB
        binary). Unit names are case-insensitive and accept full names and plurals such as
        "kilometers" or "fahrenheit". Call list_units for every accepted spelling.
        """
        source, target = _unit(from_unit), _unit(to_unit)
        if source.dimension != target.dimension:
            raise ToolError(
                f"Cannot convert {source.dimension} ({source.symbol}) to {target.dimension} ({target.symbol}). "
                f"{source.dimension.capitalize()} units: {_symbols(source.dimension)}."
            )
        if source.dimension == "temperature":
            celsius = _TO_CELSIUS[source.symbol](value)
            if celsius < -273.15 - 1e-9:
                raise ToolError(f"{value} {source.symbol} is below absolute zero.")
            result = _FROM_CELSIUS[target.symbol](celsius)
        else:
            result = value * source.factor / target.factor
        if not math.isfinite(result):
            raise ToolError(f"{value} {source.symbol} in {target.symbol} is too large to represent.")
        result = _tidy(result)
        return Conversion(
            value=value,
            from_unit=source.symbol,
            to_unit=target.symbol,
            result=result,
            dimension=source.dimension,
            text=f"{value:g} {source.symbol} = {result:.12g} {target.symbol}",
        )

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def calculate(
        expression: Annotated[
            str,
            Field(
                min_length=1,
                max_length=_MAX_EXPRESSION,
                description='Arithmetic in Python syntax, e.g. "(3 + 4) * 2 ** 10" or "sqrt(2) * pi".',
            ),
        ],
    ) -> Calculation:
        """Evaluate an arithmetic expression safely and return the exact result.

        Supports numbers, + - * / // % ** (power), parentheses, unary minus, the constants
        pi and e, and the functions sqrt, abs, round(x[, digits]), min, max, log(x[, base]),
        sin, cos and tan (radians). Integer arithmetic is exact; / always gives a float.
        Variables, attributes and any other Python are rejected.
        """
        try:
            tree = ast.parse(expression.strip(), mode="eval")
        except SyntaxError as exc:
            raise ToolError(f"Not a valid expression: {exc.msg}.") from exc
        try:
            result = _evaluate(tree.body)
        except ZeroDivisionError as exc:
            raise ToolError("Division by zero.") from exc
        except OverflowError as exc:
            raise ToolError("The result is too large to represent.") from exc
        except (ValueError, TypeError) as exc:
            # math.sqrt(-1), math.log(0) and friends end up here.
            raise ToolError(f"Math error: {exc}.") from exc
        except RecursionError as exc:
            raise ToolError("The expression is nested too deeply.") from exc
        if isinstance(result, float) and not math.isfinite(result):
            raise ToolError("The result is too large to represent (or not a number).")
        return Calculation(expression=expression, result=result)

    @mcp.tool(annotations=READ_ONLY)
    @tool_doc
    def list_units(
        dimension: Annotated[
            Dimension | None, Field(description="Only list units of this dimension; omit for all.")
        ] = None,
    ) -> UnitListing:
        """List the units convert_units accepts, grouped by dimension, with their accepted aliases."""
        wanted: list[Dimension] = [dimension] if dimension else list(_DIMENSIONS)
        return UnitListing(
            dimensions=[
                DimensionUnits(
                    dimension=d,
                    units=[
                        UnitInfo(symbol=u.symbol, name=u.name, aliases=list(u.aliases))
                        for u in _UNITS
                        if u.dimension == d
                    ],
                )
                for d in wanted
            ]
        )

    return mcp


def main(argv: list[str] | None = None) -> None:
    """Entry point for ``python -m toolscout.demo.units``."""
    serve(build_server(), argv)


if __name__ == "__main__":
    main()
