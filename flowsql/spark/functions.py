"""Scalar functions: canonical planner name -> PySpark source text.

Each entry renders one :class:`Call` and ends with a cast to the call's planner type where
Spark's own result type may differ (``length`` is INT in Spark and BIGINT in the plan,
``floor(double)`` is BIGINT in Spark and DOUBLE in DuckDB). Semantics follow DuckDB, our
oracle, where Spark differs:

- ``/`` is float division and ``x / 0`` is +-inf or NaN (Spark would give NULL or fail);
- integer arithmetic happens in the result type (BIGINT), decimals use Spark's exact
  decimal arithmetic and are cast to the planner's precision afterwards;
- ``LIKE`` has no escape character unless one is given (Spark defaults to backslash);
- ``dow`` counts Sunday as 0 (Spark's ``dayofweek`` starts at 1);
- ``concat`` is the ``||`` operator: NULL if any argument is NULL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.errors import PlanError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call, Cast, Expr, Literal, render
from flowsql.spark.literals import cast, convert, interval_parts, literal

if TYPE_CHECKING:
    from flowsql.spark.expressions import Renderer

ScalarRenderer = Callable[["Renderer", Call], str]

SCALAR: dict[str, ScalarRenderer] = {}


def _register(*names: str) -> Callable[[ScalarRenderer], ScalarRenderer]:
    def deco(fn: ScalarRenderer) -> ScalarRenderer:
        for name in names:
            SCALAR[name] = fn
        return fn
    return deco


def _args(r: Renderer, call: Call) -> list[str]:
    return [r.render(a) for a in call.args]


def _int_arg(r: Renderer, e: Expr) -> str:
    """An integer argument Spark wants as INT (positions, counts, lengths)."""
    inner = e.arg if isinstance(e, Cast) and T.is_integer(e.arg.dtype) else e
    if isinstance(inner, Literal) and isinstance(inner.value, int):
        return literal(inner.value, pa.int32())
    return cast(r.render(e), pa.int32())


def _literal_int(call: Call, index: int, what: str) -> int:
    arg = call.args[index]
    if not (isinstance(arg, Literal) and isinstance(arg.value, int)):
        raise PlanError(f"the Spark engine needs a constant {what} in {render(call)}")
    return int(arg.value)


def _simple(spark_name: str, typed: bool = True) -> ScalarRenderer:
    """``F.<spark_name>(args...)``, cast to the planner type unless Spark's type is exact."""
    def fn(r: Renderer, call: Call) -> str:
        text = f"F.{spark_name}({', '.join(_args(r, call))})"
        return cast(text, call.dtype) if typed else text
    return fn


# --- arithmetic -------------------------------------------------------------------------

_OPS = {"add": "+", "subtract": "-", "multiply": "*", "modulo": "%"}


@_register("add", "subtract", "multiply", "modulo")
def _arithmetic(r: Renderer, call: Call) -> str:
    a, b = call.args
    if any(T.is_temporal(x.dtype) or T.is_interval(x.dtype) for x in (a, b)):
        return _temporal_arithmetic(r, call)
    t = call.dtype
    if T.is_null(t):
        return "F.lit(None)"
    op = _OPS[call.name]
    if T.is_decimal(t):
        # Spark's decimal arithmetic is exact for these precisions; the planner's type is
        # restored by the final cast.
        return cast(f"({r.render(a)} {op} {r.render(b)})", t)
    left, right = (convert(r.render(x), x.dtype, t) for x in (a, b))
    return cast(f"({left} {op} {right})", t)


@_register("divide")
def _divide(r: Renderer, call: Call) -> str:
    num, den = (convert(r.render(x), x.dtype, T.FLOAT64) for x in call.args)
    # IEEE division as in DuckDB: x / 0 is +-inf (NaN for 0 / 0), never NULL or an error.
    return (f"F.when({den} == 0, {num} * F.lit(float('inf')))"
            f".otherwise({num} / {den})")


@_register("negate")
def _negate(r: Renderer, call: Call) -> str:
    return cast(f"(-{convert(r.render(call.args[0]), call.args[0].dtype, call.dtype)})",
                call.dtype)


def _temporal_arithmetic(r: Renderer, call: Call) -> str:
    a, b = call.args
    if call.name == "add" and not T.is_temporal(a.dtype):
        a, b = b, a
    if call.name not in ("add", "subtract") or not T.is_temporal(a.dtype):
        raise PlanError(f"the Spark engine does not support {render(call)}")
    sign = 1 if call.name == "add" else -1
    left = r.render(a)
    if T.is_temporal(b.dtype):
        if pa.types.is_date(a.dtype) and pa.types.is_date(b.dtype) and sign < 0:
            return cast(f"F.datediff({left}, {r.render(b)})", call.dtype)
        raise PlanError(f"the Spark engine does not support {render(call)}")
    if T.is_integer(b.dtype):
        fn = "date_add" if sign > 0 else "date_sub"
        return cast(f"F.{fn}({left}, {_int_arg(r, b)})", call.dtype)
    if not isinstance(b, Literal):
        raise PlanError(f"the Spark engine needs a constant interval in {render(call)}")
    months, days, nanos = (sign * x for x in interval_parts(b.value))
    if pa.types.is_date(a.dtype) and nanos == 0:
        # Months first, then days, as DuckDB adds an interval to a date.
        if months:
            left = f"F.add_months({left}, F.lit({months}))"
        if days:
            left = f"F.date_add({left}, F.lit({days}))"
        return cast(left, call.dtype)
    shift = literal((months, days, nanos), T.INTERVAL)
    return cast(f"({cast(left, pa.timestamp('us'))} + {shift})", call.dtype)


# --- comparison and logic ---------------------------------------------------------------

_COMPARISONS = {"eq": "==", "neq": "!=", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


@_register(*_COMPARISONS)
def _compare(r: Renderer, call: Call) -> str:
    left, right = _args(r, call)
    return f"({left} {_COMPARISONS[call.name]} {right})"


@_register("is_distinct_from")
def _is_distinct(r: Renderer, call: Call) -> str:
    left, right = _args(r, call)
    return f"(~{left}.eqNullSafe({right}))"


@_register("is_not_distinct_from")
def _is_not_distinct(r: Renderer, call: Call) -> str:
    left, right = _args(r, call)
    return f"{left}.eqNullSafe({right})"


@_register("and", "or")
def _logic(r: Renderer, call: Call) -> str:
    op = " & " if call.name == "and" else " | "
    return "(" + op.join(_args(r, call)) + ")"


@_register("not")
def _not(r: Renderer, call: Call) -> str:
    return f"(~{r.render(call.args[0])})"


@_register("is_null")
def _is_null(r: Renderer, call: Call) -> str:
    return f"{r.render(call.args[0])}.isNull()"


@_register("is_not_null")
def _is_not_null(r: Renderer, call: Call) -> str:
    return f"{r.render(call.args[0])}.isNotNull()"


@_register("is_true", "is_false")
def _is_bool(r: Renderer, call: Call) -> str:
    return f"{r.render(call.args[0])}.eqNullSafe(F.lit({call.name == 'is_true'}))"


@_register("in_list")
def _in_list(r: Renderer, call: Call) -> str:
    first, *rest = _args(r, call)
    return f"{first}.isin({', '.join(rest)})"


SCALAR["coalesce"] = _simple("coalesce")
SCALAR["nullif"] = _simple("nullif")


@_register("greatest", "least")
def _extreme(r: Renderer, call: Call) -> str:
    args = _args(r, call)
    text = args[0] if len(args) == 1 else f"F.{call.name}({', '.join(args)})"
    return cast(text, call.dtype)


# --- strings ----------------------------------------------------------------------------

@_register("concat")
def _concat(r: Renderer, call: Call) -> str:
    # concat() skips NULL arguments (DuckDB); Spark's concat_ws does, its concat does not.
    # The binder spells ``a || b`` as a CASE that returns NULL first.
    return f"F.concat_ws('', {', '.join(_args(r, call))})"


@_register("like", "ilike")
def _like(r: Renderer, call: Call) -> str:
    value, pattern = call.args[0], call.args[1]
    if len(call.args) == 3:
        return (f"F.{call.name}({r.render(value)}, {r.render(pattern)}, "
                f"{r.render(call.args[2])})")
    # Without ESCAPE a backslash is an ordinary character (SQL); Spark's default escape
    # character is the backslash, so backslashes are doubled.
    if isinstance(pattern, Literal) and isinstance(pattern.value, str):
        text = literal(pattern.value.replace("\\", "\\\\"), T.STRING)
    else:
        text = f"F.replace({r.render(pattern)}, F.lit('\\\\'), F.lit('\\\\\\\\'))"
    return f"F.{call.name}({r.render(value)}, {text})"


for _name in ("upper", "lower", "trim", "ltrim", "rtrim", "reverse", "replace"):
    SCALAR[_name] = _simple(_name, typed=False)
for _name, _spark in (("starts_with", "startswith"), ("ends_with", "endswith"),
                      ("contains", "contains"), ("regexp_matches", "regexp_like")):
    SCALAR[_name] = _simple(_spark, typed=False)
SCALAR["length"] = _simple("length")


@_register("strpos")
def _strpos(r: Renderer, call: Call) -> str:
    haystack, needle = _args(r, call)
    return cast(f"F.position({needle}, {haystack})", call.dtype)


@_register("substring", "left", "right", "repeat")
def _string_with_counts(r: Renderer, call: Call) -> str:
    name = "substr" if call.name == "substring" else call.name
    args = [r.render(call.args[0]), *(_int_arg(r, a) for a in call.args[1:])]
    return f"F.{name}({', '.join(args)})"


@_register("lpad", "rpad")
def _pad(r: Renderer, call: Call) -> str:
    value, length, fill = call.args
    return f"F.{call.name}({r.render(value)}, {_int_arg(r, length)}, {r.render(fill)})"


@_register("split_part")
def _split_part(r: Renderer, call: Call) -> str:
    value, delimiter, index = call.args
    return f"F.split_part({r.render(value)}, {r.render(delimiter)}, {_int_arg(r, index)})"


# --- math -------------------------------------------------------------------------------

for _name, _spark in (("abs", "abs"), ("floor", "floor"), ("ceil", "ceil"), ("sqrt", "sqrt"),
                      ("power", "pow"), ("ln", "ln"), ("log10", "log10"), ("exp", "exp"),
                      ("sign", "signum")):
    SCALAR[_name] = _simple(_spark)


@_register("round")
def _round(r: Renderer, call: Call) -> str:
    scale = _literal_int(call, 1, "number of digits") if len(call.args) == 2 else 0
    return cast(f"F.round({r.render(call.args[0])}, {scale})", call.dtype)


# --- date and time ----------------------------------------------------------------------

_EXTRACT = {"extract_year": "year", "extract_quarter": "quarter", "extract_month": "month",
            "extract_day": "dayofmonth", "extract_hour": "hour", "extract_minute": "minute",
            "extract_second": "second", "extract_doy": "dayofyear",
            "extract_week": "weekofyear"}
for _name, _spark in _EXTRACT.items():
    SCALAR[_name] = _simple(_spark)


@_register("extract_dow")
def _dow(r: Renderer, call: Call) -> str:
    return cast(f"(F.dayofweek({r.render(call.args[0])}) - 1)", call.dtype)


@_register("extract_epoch")
def _epoch(r: Renderer, call: Call) -> str:
    arg = call.args[0]
    if pa.types.is_date(arg.dtype):
        return cast(f"(F.unix_date({r.render(arg)}) * 86400)", call.dtype)
    # Timestamps without a zone are read in the session time zone (UTC by default).
    micros = f"F.unix_micros({cast(r.render(arg), pa.timestamp('us', 'UTC'))})"
    return cast(f"({micros} / 1000000)", call.dtype)


@_register("date_trunc")
def _date_trunc(r: Renderer, call: Call) -> str:
    unit, value = call.args
    if not (isinstance(unit, Literal) and isinstance(unit.value, str)):
        raise PlanError(f"the Spark engine needs a constant unit in {render(call)}")
    return cast(f"F.date_trunc({unit.value.lower()!r}, {r.render(value)})", call.dtype)
