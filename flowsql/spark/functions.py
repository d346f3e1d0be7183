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
from flowsql.spark.spark_types import spark_type

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
    if isinstance(b, Call) and b.name == "multiply" and isinstance(b.args[0], Literal):
        return _shift_by_units(r, call, a, b.args[0], b.args[1], sign)
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


def _shift_by_units(r: Renderer, call: Call, value: Expr, step: Literal, count: Expr,
                    sign: int) -> str:
    """``value +- count * INTERVAL step`` (TIMESTAMPADD) for a one-unit step: months and
    days keep dates dates; shorter steps count microseconds."""
    months, days, nanos = interval_parts(step.value)
    if sum(1 for x in (months, days, nanos) if x) != 1:
        raise PlanError(f"the Spark engine needs a one-unit interval in {render(call)}")
    n = convert(r.render(count), count.dtype, T.INT64)
    amount = months or days or nanos // 1000
    units = f"({n} * F.lit({sign * amount}))"
    left = r.render(value)
    if pa.types.is_date(value.dtype) and not nanos:
        fn = "add_months" if months else "date_add"
        return cast(f"F.{fn}({left}, {units}.cast('int'))", call.dtype)
    unit = "MONTH" if months else "DAY" if days else "MICROSECOND"
    return cast(f"F.timestamp_add({unit!r}, {units}, {cast(left, pa.timestamp('us'))})",
                call.dtype)


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

for _name in ("sin", "cos", "tan", "cot", "asin", "acos", "atan", "atan2", "sinh", "cosh",
              "tanh", "degrees", "radians"):
    SCALAR[_name] = _simple(_name, typed=False)
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


# --- Flink's built-in functions ----------------------------------------------------------
# Rendered where Spark has the same meaning; where it has not (INITCAP's word boundaries,
# TRUNCATE, the JSON functions' NULL rules, ...) the function is missing here and the
# compiler refuses the query naming it.

def _constant_text(call: Call, index: int, what: str) -> str:
    arg = call.args[index]
    if not (isinstance(arg, Literal) and isinstance(arg.value, str)):
        raise PlanError(f"the Spark engine needs a constant {what} in {render(call)}")
    return arg.value


_MONTHS_PER_UNIT = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


@_register("timestampdiff")
def _timestampdiff(r: Renderer, call: Call) -> str:
    unit = _constant_text(call, 0, "unit").upper()
    start, end = (cast(r.render(a), pa.timestamp("us")) for a in call.args[1:])
    if unit not in _MONTHS_PER_UNIT:
        # Whole units of elapsed time, truncated toward zero: Spark's rule too.
        return cast(f"F.timestamp_diff({unit!r}, {start}, {end})", call.dtype)
    # Spark counts months by the calendar (Jan 31 to Feb 29 is 0); Flink counts a month once
    # adding it, the day clamped, does not pass the end (1), as the local engine does.
    low = f"F.least({start}, {end})"
    high = f"F.greatest({start}, {end})"
    months = (f"((F.year({high}) * 12 + F.month({high})) - "
              f"(F.year({low}) * 12 + F.month({low})))")
    reached = f"F.timestamp_add('MONTH', {months}, {low})"
    whole = f"F.when({reached} > {high}, {months} - 1).otherwise({months})"
    # least/greatest skip NULLs; a NULL bound must give NULL.
    signed = (f"F.when({start}.isNull() | {end}.isNull(), F.lit(None))"
              f".when({end} < {start}, -{whole}).otherwise({whole})")
    per = _MONTHS_PER_UNIT[unit]
    return cast(signed if per == 1 else f"({signed} / {per})", call.dtype)


@_register("ceil_temporal")
def _ceil_temporal(r: Renderer, call: Call) -> str:
    unit = _constant_text(call, 0, "unit").lower()
    value = cast(r.render(call.args[1]), pa.timestamp("us"))
    floor = f"F.date_trunc({unit!r}, {value})"
    up = f"F.timestamp_add({unit.upper()!r}, F.lit(1), {floor})"
    return cast(f"F.when({floor} == {value}, {value}).otherwise({up})", call.dtype)


@_register("date_format")
def _date_format(r: Renderer, call: Call) -> str:
    # Spark's patterns are Java's too (a letter Spark lacks fails there, naming it).
    pattern = _constant_text(call, 1, "pattern")
    return f"F.date_format({r.render(call.args[0])}, {pattern!r})"


@_register("from_unixtime")
def _from_unixtime(r: Renderer, call: Call) -> str:
    pattern = _constant_text(call, 1, "pattern") if len(call.args) > 1 \
        else "yyyy-MM-dd HH:mm:ss"
    return f"F.from_unixtime({cast(r.render(call.args[0]), T.INT64)}, {pattern!r})"


def _parsed(r: Renderer, call: Call, default: str) -> str:
    """``try_to_timestamp``: text that does not match is NULL, as in Flink (ANSI Spark's
    ``to_timestamp`` would fail instead)."""
    pattern = _constant_text(call, 1, "pattern") if len(call.args) > 1 else default
    return f"F.try_to_timestamp({r.render(call.args[0])}, F.lit({pattern!r}))"


@_register("to_timestamp")
def _to_timestamp(r: Renderer, call: Call) -> str:
    if len(call.args) == 1:
        # Flink's default form: 'yyyy-MM-dd[ HH:mm:ss[.fraction]]'.
        text = r.render(call.args[0])
        shape = r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}:\d{2}(\.\d{1,9})?)?$"
        trimmed = f"F.trim({text})"
        parsed = f"F.try_to_timestamp({trimmed})"
        return cast(f"F.when({trimmed}.rlike({shape!r}), {parsed})", call.dtype)
    return cast(_parsed(r, call, ""), call.dtype)


@_register("to_date")
def _to_date(r: Renderer, call: Call) -> str:
    return cast(_parsed(r, call, "yyyy-MM-dd"), call.dtype)


@_register("unix_timestamp")
def _unix_timestamp(r: Renderer, call: Call) -> str:
    # Parsed in the session zone (UTC, see session.py), then read as the bound zone's time.
    parsed = _parsed(r, call, "yyyy-MM-dd HH:mm:ss")
    if len(call.args) > 2:
        parsed = f"F.to_utc_timestamp({parsed}, {_constant_text(call, 2, 'time zone')!r})"
    return cast(f"F.unix_seconds({parsed})", call.dtype)


# The engine's Spark session keeps spark.sql.session.timeZone at UTC, so a Spark TIMESTAMP
# (an instant) cast to TIMESTAMP_NTZ shows its UTC time; these two shift by the zone the
# binder wrote into the call, as the local runtime does.
@_register("ltz_to_local")
def _ltz_to_local(r: Renderer, call: Call) -> str:
    zone = _constant_text(call, 1, "time zone")
    return cast(f"F.from_utc_timestamp({r.render(call.args[0])}, {zone!r})", call.dtype)


@_register("local_to_ltz")
def _local_to_ltz(r: Renderer, call: Call) -> str:
    zone = _constant_text(call, 1, "time zone")
    instant = cast(r.render(call.args[0]), pa.timestamp(call.dtype.unit, "UTC"))
    return cast(f"F.to_utc_timestamp({instant}, {zone!r})", call.dtype)


@_register("to_timestamp_ltz")
def _to_timestamp_ltz(r: Renderer, call: Call) -> str:
    precision = _literal_int(call, 1, "precision") if len(call.args) > 1 else 3
    if precision not in (0, 3):
        raise PlanError(f"TO_TIMESTAMP_LTZ precision must be 0 or 3 in {render(call)}")
    fn = "timestamp_seconds" if precision == 0 else "timestamp_millis"
    return cast(f"F.{fn}({cast(r.render(call.args[0]), T.INT64)})", call.dtype)


@_register("concat_ws")
def _concat_ws(r: Renderer, call: Call) -> str:
    # Spark's concat_ws skips NULL values and is NULL for a NULL separator, as Flink's.
    # F.concat_ws takes the separator as a Python string; the SQL function takes a column.
    return f"F.call_function('concat_ws', {', '.join(_args(r, call))})" \
        if len(call.args) > 1 else \
        f"F.when({r.render(call.args[0])}.isNotNull(), F.lit(''))"


@_register("locate")
def _locate(r: Renderer, call: Call) -> str:
    needle, haystack = call.args[0], call.args[1]
    # A start before 1 searches from 1 in Flink; Spark would answer 0. F.locate takes the
    # needle and the start as Python values only; the SQL function takes columns.
    start = f"F.greatest({_int_arg(r, call.args[2])}, F.lit(1))" if len(call.args) > 2 \
        else "F.lit(1)"
    return cast(f"F.call_function('locate', {r.render(needle)}, {r.render(haystack)}, "
                f"{start})", call.dtype)


@_register("split_index")
def _split_index(r: Renderer, call: Call) -> str:
    value, separator, index = call.args
    sep = _constant_text(call, 1, "separator")
    if not sep:
        return cast("F.lit(None)", call.dtype)
    quoted = "\\Q" + sep.replace("\\E", "\\E\\\\E\\Q") + "\\E"
    parts = f"F.split({r.render(value)}, {quoted!r}, -1)"
    return f"F.get({parts}, {_int_arg(r, index)})"


@_register("regexp_extract")
def _regexp_extract(r: Renderer, call: Call) -> str:
    value, pattern = r.render(call.args[0]), _constant_text(call, 1, "regular expression")
    group = _literal_int(call, 2, "group") if len(call.args) > 2 else 0
    # Spark gives '' where nothing matches, Flink NULL.
    return (f"F.when({value}.rlike({pattern!r}), "
            f"F.regexp_extract({value}, {pattern!r}, {group}))")


@_register("regexp_replace")
def _regexp_replace(r: Renderer, call: Call) -> str:
    # Both take Java regular expressions and '$1' group references.
    return f"F.regexp_replace({', '.join(_args(r, call))})"


@_register("trim_chars", "ltrim_chars", "rtrim_chars")
def _trim_chars(r: Renderer, call: Call) -> str:
    fn = {"trim_chars": "btrim", "ltrim_chars": "ltrim", "rtrim_chars": "rtrim"}[call.name]
    return f"F.{fn}({', '.join(_args(r, call))})"


SCALAR["chr"] = _simple("chr", typed=False)  # code modulo 256, '' below 0: as Flink


@_register("ascii")
def _ascii(r: Renderer, call: Call) -> str:
    # Flink answers the first UTF-8 byte as a signed Java byte; Spark's ascii is the code
    # point, so the byte is read from the text's hex form.
    text = r.render(call.args[0])
    byte = f"F.conv(F.substring(F.hex({text}), 1, 2), 16, 10).cast('int')"
    return cast(f"F.when({text} == '', F.lit(0)).when({byte} >= 128, {byte} - 256)"
                f".otherwise({byte})", call.dtype)


@_register("overlay")
def _overlay(r: Renderer, call: Call) -> str:
    value, by = (r.render(a) for a in call.args[:2])
    # A length of -1 means the replacement's length in Spark, as a missing FOR in Flink.
    length = _int_arg(r, call.args[3]) if len(call.args) > 3 else "F.lit(-1)"
    return f"F.overlay({value}, {by}, {_int_arg(r, call.args[2])}, {length})"


@_register("is_alpha", "is_digit", "is_decimal")
def _is_kind(r: Renderer, call: Call) -> str:
    pattern = {"is_alpha": r"^\p{L}+$", "is_digit": r"^\p{Nd}+$",
               "is_decimal": r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$"}[call.name]
    return f"F.coalesce({r.render(call.args[0])}.rlike({pattern!r}), F.lit(False))"




@_register("log")
def _log(r: Renderer, call: Call) -> str:
    base, value = _args(r, call)
    # Spark's log is NULL for a non-positive argument; Flink's (Java's) is -inf for 0 and NaN
    # below, as the local engine's.
    return (f"F.when({value} > 0, F.call_function('log', {base}, {value}))"
            f".when({value} == 0, F.lit(float('-inf')) / F.ln({base}))"
            f".when({value} < 0, F.lit(float('nan')))")



for _name in ("md5", "sha1"):
    SCALAR[_name] = _simple(_name, typed=False)
for _name, _bits in (("sha224", 224), ("sha256", 256), ("sha384", 384), ("sha512", 512)):
    SCALAR[_name] = (lambda bits: lambda r, call:
                     f"F.sha2({r.render(call.args[0])}, {bits})")(_bits)


@_register("sha2")
def _sha2(r: Renderer, call: Call) -> str:
    return f"F.sha2({r.render(call.args[0])}, {_literal_int(call, 1, 'bit length')})"


SCALAR["to_base64"] = _simple("base64", typed=False)


@_register("from_base64")
def _from_base64(r: Renderer, call: Call) -> str:
    return f"F.unbase64({r.render(call.args[0])}).cast('string')"


@_register("try_cast")
def _try_cast(r: Renderer, call: Call) -> str:
    arg = call.args[0]
    text = r.render(arg)
    if T.is_integer(call.dtype) and T.is_string(arg.dtype):
        # '2.5' is 2, as CAST: read an exact decimal first, then truncate.
        text = f"F.trim({text}).try_cast({spark_type(pa.decimal128(38, 12))!r})"
    return f"{text}.try_cast({spark_type(call.dtype)!r})"
