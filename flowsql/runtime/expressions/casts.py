"""SQL CAST: Flink's conversions to integers, DuckDB's everywhere else.

A fractional number (double, decimal, or a string such as ``'2.5'``) cast to an integer type
is truncated toward zero, as Flink and Spark do; DuckDB rounds instead, and a join or group
key computed by such a cast must match the rows Flink matches. The truncated value must fit
the target type: out of range (and NaN or infinity) is an error naming the value, never a
wrap or a saturation. Strings are trimmed of surrounding spaces before parsing; booleans
accept true/false/t/f/yes/no/y/n/1/0. Narrowing a decimal's scale rounds half away from
zero (DuckDB and Flink agree). Numbers print as DuckDB prints them: decimals keep their scale, doubles use the
shortest round-trip form with a ``.0`` for integral values. A value that cannot be cast
raises :class:`ExecutionError` naming that value and the target type.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import typed_null

_TRUE_WORDS = pa.array(["true", "t", "yes", "y", "1"])
_FALSE_WORDS = pa.array(["false", "f", "no", "n", "0"])
_HALF_AWAY = "half_towards_infinity"

Converter = Callable[[Datum], Datum]


def _first_failure(values: Datum, convert: Converter) -> object:
    """The first value ``convert`` rejects (error path only: tries distinct values)."""
    distinct = [values] if isinstance(values, pa.Scalar) else pc.unique(values)
    for v in distinct:
        if not v.is_valid:
            continue
        try:
            convert(pa.array([v.as_py()], type=v.type))
        except (pa.ArrowException, ExecutionError, ValueError):
            return v.as_py()
    return None


def _strict(convert: Converter, target: pa.DataType) -> Converter:
    """``convert`` raising ExecutionError that names the offending value."""
    def run(values: Datum) -> Datum:
        try:
            return convert(values)
        except (pa.ArrowException, ValueError):
            bad = _first_failure(values, convert)
            shown = f"'{bad}'" if isinstance(bad, str) else str(bad)
            raise ExecutionError(f"cannot cast {shown} to {T.sql_name(target)}") from None
    return run


def _string_to_bool(values: Datum) -> Datum:
    words = pc.utf8_lower(pc.utf8_trim(values, characters=" "))
    is_true = pc.is_in(words, value_set=_TRUE_WORDS)
    is_false = pc.is_in(words, value_set=_FALSE_WORDS)
    if not pc.all(pc.or_(pc.or_(is_true, is_false), pc.is_null(words))).as_py():
        raise ValueError("not a boolean")
    return pc.if_else(pc.is_valid(words), is_true, typed_null(pa.bool_()))


def _string_to_number(target: pa.DataType) -> Converter:
    def convert(values: Datum) -> Datum:
        trimmed = pc.utf8_trim(values, characters=" ")
        if T.is_float(target):
            return pc.cast(trimmed, target)
        if T.is_decimal(target):
            wide = pc.cast(trimmed, pa.decimal128(T.MAX_DECIMAL_PRECISION,
                                                  max(target.scale, 12)))
            return _decimal_to_decimal(target)(wide)
        try:
            return pc.cast(trimmed, target)
        except pa.ArrowInvalid:
            # '2.5' AS INTEGER is 2 (Flink truncates; DuckDB would round to 3): parse as an
            # exact decimal, then truncate.
            exact = pc.cast(trimmed, pa.decimal128(T.MAX_DECIMAL_PRECISION, 12))
            return pc.cast(pc.trunc(exact), target)
    return convert


def _decimal_to_decimal(target: pa.DataType) -> Converter:
    def convert(values: Datum) -> Datum:
        if values.type.scale > target.scale:
            values = pc.round(values, target.scale, round_mode=_HALF_AWAY)
        return pc.cast(values, target)
    return convert


def _to_integer(target: pa.DataType) -> Converter:
    """Truncation toward zero, then a checked cast (NaN and out-of-range values fail)."""
    def convert(values: Datum) -> Datum:
        return pc.cast(pc.trunc(values), target)
    return convert


def _float_to_decimal(target: pa.DataType) -> Converter:
    def convert(values: Datum) -> Datum:
        return pc.cast(pc.round(values, target.scale, round_mode=_HALF_AWAY), target)
    return convert


def _float_to_string(values: Datum) -> Datum:
    text = pc.cast(values, T.STRING)
    integral = pc.invert(pc.match_substring_regex(text, r"[.eEna]"))
    text = pc.if_else(integral, pc.binary_join_element_wise(text, ".0", ""), text)
    return pc.replace_substring_regex(text, r"e([+-])(\d)$", r"e\10\2")


def _integer_to_decimal(target: pa.DataType) -> Converter:
    def convert(values: Datum) -> Datum:
        wide = pc.cast(values, pa.decimal128(T.MAX_DECIMAL_PRECISION, target.scale))
        return pc.cast(wide, target)
    return convert


def converter(source: pa.DataType, target: pa.DataType) -> Converter:
    """The SQL conversion from ``source`` to ``target`` (without the error naming)."""
    if T.is_string(source):
        if pa.types.is_boolean(target):
            return _string_to_bool
        if T.is_numeric(target):
            return _string_to_number(target)
        if T.is_temporal(target):
            return lambda v: pc.cast(pc.utf8_trim(v, characters=" "), target)
    if T.is_string(target):
        if T.is_float(source):
            return _float_to_string
        return lambda v: pc.cast(v, target)
    if T.is_decimal(source) and T.is_decimal(target):
        return _decimal_to_decimal(target)
    if T.is_integer(target) and (T.is_decimal(source) or T.is_float(source)):
        return _to_integer(target)
    if T.is_integer(source) and T.is_decimal(target):
        return _integer_to_decimal(target)
    if T.is_float(source) and T.is_decimal(target):
        return _float_to_decimal(target)
    if pa.types.is_timestamp(source) and pa.types.is_date(target):
        return lambda v: pc.cast(v, target, safe=False)
    return lambda v: pc.cast(v, target)


def build_cast(arg: Node, target: pa.DataType) -> Run:
    source = arg.dtype
    run = arg.run
    if source.equals(target):
        return run
    if T.is_null(source):
        null = typed_null(target)
        return lambda batch: null
    convert = _strict(converter(source, target), target)
    return lambda batch: convert(run(batch))


def build_try_cast(arg: Node, target: pa.DataType) -> Run:
    """TRY_CAST: CAST, except that a value which cannot be converted becomes NULL (Flink).

    The whole batch is converted at once; only when that fails are the distinct values
    tried one by one (the error path) and the failing ones replaced by NULL."""
    source = arg.dtype
    run = arg.run
    if source.equals(target):
        return run
    if T.is_null(source):
        null = typed_null(target)
        return lambda batch: null
    convert = converter(source, target)

    def attempt(batch: pa.RecordBatch) -> Datum:
        values = run(batch)
        try:
            return convert(values)
        except (pa.ArrowException, ValueError, ExecutionError):
            pass
        if isinstance(values, pa.Scalar):
            return typed_null(target)
        bad = [v for v in pc.unique(values) if v.is_valid and _fails(convert, v)]
        keep = pc.invert(pc.fill_null(pc.is_in(values, value_set=pa.array(
            [v.as_py() for v in bad], values.type)), False))
        return convert(pc.if_else(keep, values, typed_null(values.type)))
    return attempt


def _fails(convert: Converter, value: pa.Scalar) -> bool:
    try:
        convert(pa.array([value.as_py()], type=value.type))
    except (pa.ArrowException, ValueError, ExecutionError):
        return True
    return False


@register("try_cast")
def _try_cast(call: Call, args: list[Node]) -> Run:
    return build_try_cast(args[0], call.dtype)
