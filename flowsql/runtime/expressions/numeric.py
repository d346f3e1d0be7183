"""Mathematical functions: abs, round, floor, ceil, sqrt, power, ln, log10, exp, sign, log,
truncate and the trigonometric family (sin .. tanh, cot, atan2, degrees, radians).

``round`` rounds half away from zero for decimals and doubles alike (DuckDB), a negative
digit count rounds to tens, hundreds, ...; floor/ceil of a decimal yields a decimal of scale
0. The floating-point functions are IEEE: sqrt(-1) is NaN and ln(0) is -inf, as in DuckDB.
"""

from __future__ import annotations

import math

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner import types as T
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import per_distinct

_HALF_AWAY = "half_towards_infinity"


@register("abs")
def _abs(call: Call, args: list[Node]) -> Run:
    run = args[0].run

    def absolute(batch: pa.RecordBatch) -> Datum:
        try:
            return pc.abs_checked(run(batch))
        except pa.ArrowInvalid:
            raise ExecutionError(f"integer overflow in {call}") from None
    return absolute


@register("round")
def _round(call: Call, args: list[Node]) -> Run:
    value = args[0]
    if T.is_integer(value.dtype) and len(args) == 1:
        return value.run

    def rounded(x: Datum, digits: int) -> Datum:
        if T.is_integer(x.type):
            if digits >= 0:
                return x
            x = pc.cast(x, pa.decimal128(T.integer_as_decimal(x.type).precision, 0))
        return pc.round(x, int(digits), round_mode=_HALF_AWAY)

    if len(args) == 1:
        return lambda batch: rounded(value.run(batch), 0)
    digits = args[1]
    return lambda batch: per_distinct(value.run(batch), digits.run(batch), batch.num_rows,
                                      rounded, call.dtype)


def _rounding(kernel: object) -> object:
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run
        if T.is_integer(args[0].dtype):
            return run
        return lambda batch: kernel(run(batch))  # type: ignore[operator]
    return build


register("floor")(_rounding(pc.floor))  # type: ignore[arg-type]
register("ceil")(_rounding(pc.ceil))  # type: ignore[arg-type]


def _unary_float(name: str, kernel: object) -> None:
    @register(name)
    def build(call: Call, args: list[Node]) -> Run:
        run = args[0].run
        return lambda batch: kernel(pc.cast(run(batch), T.FLOAT64))  # type: ignore[operator]


_DEGREES_PER_RADIAN = 180.0 / math.pi
for _name, _kernel in (
        ("sqrt", pc.sqrt), ("ln", pc.ln), ("log10", pc.log10), ("exp", pc.exp),
        ("sin", pc.sin), ("cos", pc.cos), ("tan", pc.tan), ("asin", pc.asin),
        ("acos", pc.acos), ("atan", pc.atan), ("sinh", pc.sinh), ("cosh", pc.cosh),
        ("tanh", pc.tanh), ("cot", lambda x: pc.divide(1.0, pc.tan(x))),
        ("degrees", lambda x: pc.multiply(x, _DEGREES_PER_RADIAN)),
        ("radians", lambda x: pc.divide(x, _DEGREES_PER_RADIAN))):
    _unary_float(_name, _kernel)


@register("atan2")
def _atan2(call: Call, args: list[Node]) -> Run:
    y, x = (a.run for a in args)
    return lambda batch: pc.atan2(pc.cast(y(batch), T.FLOAT64), pc.cast(x(batch), T.FLOAT64))


@register("power")
def _power(call: Call, args: list[Node]) -> Run:
    base, exponent = (a.run for a in args)
    return lambda batch: pc.power(pc.cast(base(batch), T.FLOAT64),
                                  pc.cast(exponent(batch), T.FLOAT64))


@register("sign")
def _sign(call: Call, args: list[Node]) -> Run:
    run = args[0].run

    def sign(batch: pa.RecordBatch) -> Datum:
        x = run(batch)
        if T.is_decimal(x.type):
            x = pc.cast(x, T.FLOAT64)
        return pc.cast(pc.sign(x), T.INT64)
    return sign


@register("log")
def _log(call: Call, args: list[Node]) -> Run:
    """LOG(base, x) = ln(x) / ln(base) in double precision (Flink)."""
    base, value = (a.run for a in args)
    return lambda batch: pc.divide(pc.ln(pc.cast(value(batch), T.FLOAT64)),
                                   pc.ln(pc.cast(base(batch), T.FLOAT64)))


@register("truncate")
def _truncate(call: Call, args: list[Node]) -> Run:
    """TRUNCATE(x[, digits]): ``x`` cut toward zero to ``digits`` decimals (tens, hundreds,
    ... for negative ``digits``), keeping its type (Flink)."""
    value = args[0]

    def cut(x: Datum, digits: int) -> Datum:
        if T.is_integer(x.type):
            if digits >= 0:
                return x
            x = pc.cast(x, pa.decimal128(T.integer_as_decimal(x.type).precision, 0))
        return pc.round(x, int(digits), round_mode="towards_zero")

    if len(args) == 1:
        return lambda batch: cut(value.run(batch), 0)
    digits = args[1]
    return lambda batch: per_distinct(value.run(batch), digits.run(batch), batch.num_rows,
                                      cut, call.dtype)
