"""Aggregate and window function calls -> PySpark source text.

``FILTER (WHERE p)`` becomes ``when(p, arg)``: the aggregate then sees NULL for filtered
rows, which every aggregate skips (``count(*)`` counts ``when(p, 1)``). ``avg`` is computed
as ``sum / count`` in double so a decimal average is not first rounded to Spark's average
scale (DuckDB divides the exact sum). Window frames map to ``rowsBetween`` /
``rangeBetween``; ranking and offset functions take no frame, as in SQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flowsql.errors import PlanError
from flowsql.planner.expressions import AggCall, Frame, FrameBound, Literal, WindowCall, render
from flowsql.spark.literals import cast, python_value
from flowsql.spark.spark_types import spark_type

if TYPE_CHECKING:
    from flowsql.spark.expressions import Renderer

_PLAIN = {"min": "min", "max": "max", "bool_and": "bool_and", "bool_or": "bool_or"}
_STATISTICS = ("stddev_samp", "stddev_pop", "var_samp", "var_pop")
_RANKING = {"row_number": "row_number", "rank": "rank", "dense_rank": "dense_rank",
            "percent_rank": "percent_rank", "cume_dist": "cume_dist"}
_NO_FRAME = frozenset({*_RANKING, "ntile", "lag", "lead"})


def aggregate(r: Renderer, agg: AggCall, over: str = "") -> str:
    """An aggregate Column, cast to the planner's result type. ``over`` (``.over(spec)``)
    is attached to every Spark aggregate inside, for use as a window function."""
    args = [r.render(a) for a in agg.args]
    if agg.function is not None:
        return _user_aggregate(agg, args, over)
    if agg.filter is not None:
        condition = r.render(agg.filter)
        args = [f"F.when({condition}, {a})" for a in (args or ["F.lit(1)"])]
    elif agg.name == "count_star":
        args = ["F.lit(1)"]
    name, distinct = agg.name, agg.distinct
    count = "count_distinct" if distinct else "count"
    total = "sum_distinct" if distinct else "sum"
    if name in ("count", "count_star"):
        text = f"F.{count}({', '.join(args) if distinct else args[0]}){over}"
    elif name == "sum":
        text = f"F.{total}({args[0]}){over}"
    elif name == "avg":
        text = (f"F.try_divide(F.{total}({args[0]}){over}.cast('double'), "
                f"F.{count}({args[0]}){over})")
    elif name in _PLAIN:
        text = f"F.{_PLAIN[name]}({args[0]}){over}"
    elif name in _STATISTICS:
        text = f"F.{name}({args[0]}.cast('double')){over}"
    elif name == "any_value":
        text = f"F.any_value({args[0]}, F.lit(True)){over}"
    else:
        raise PlanError(f"the Spark engine does not support aggregate '{name}' "
                        f"(in {render(agg)})")
    return cast(text, agg.dtype)


def _user_aggregate(agg: AggCall, args: list[str], over: str) -> str:
    """A user-defined aggregate as a grouped-aggregate pandas UDF (``user_functions``)."""
    assert agg.function is not None
    if agg.filter is not None or over:
        raise PlanError(f"the Spark engine runs user-defined aggregates without FILTER "
                        f"and OVER only (in {render(agg)})")
    udf = (f"FU.aggregate_udf({agg.function.path!r}, {agg.function.name!r}, "
           f"{spark_type(agg.dtype)!r})")
    return cast(f"{udf}({', '.join(args)})", agg.dtype)


def window(r: Renderer, call: WindowCall) -> str:
    """``<function>.over(<window spec>)``, cast to the planner's result type."""
    if call.distinct:
        raise PlanError(f"the Spark engine does not support DISTINCT in window functions "
                        f"(in {render(call)})")
    over = f".over({_spec(r, call)})"
    name = call.name
    args = [r.render(a) for a in call.args]
    if name in _RANKING:
        text = f"F.{_RANKING[name]}()"
    elif name == "ntile":
        text = f"F.ntile({_constant(call, 0, 'bucket count')})"
    elif name in ("lag", "lead"):
        offset = _constant(call, 1, "offset") if len(call.args) > 1 else 1
        default = _constant(call, 2, "default") if len(call.args) > 2 else None
        text = f"F.{name}({args[0]}, {offset}, {python_value(default)})"
    elif name == "first_value":
        text = f"F.first({args[0]})"
    elif name == "last_value":
        text = f"F.last({args[0]})"
    elif name == "nth_value":
        text = f"F.nth_value({args[0]}, {_constant(call, 1, 'position')})"
    else:
        return aggregate(r, AggCall(name, call.args, call.dtype, function=call.function), over)
    return cast(text + over, call.dtype)


def _constant(call: WindowCall, index: int, what: str) -> object:
    arg = call.args[index]
    if not isinstance(arg, Literal):
        raise PlanError(f"the Spark engine needs a constant {what} in {render(call)}")
    return arg.value


def _spec(r: Renderer, call: WindowCall) -> str:
    text = "Window"
    if call.partition_by or not call.order_by:
        text += f".partitionBy({', '.join(r.render(p) for p in call.partition_by)})"
    if call.order_by:
        text += f".orderBy({', '.join(r.sort_key(k) for k in call.order_by)})"
    if call.frame is None or call.name in _NO_FRAME:
        return text
    return text + _frame(call.frame, ordered=bool(call.order_by))


def _frame(frame: Frame, ordered: bool) -> str:
    if not ordered and frame.mode == "range":
        # Without ORDER BY every row is a peer of every other: the frame is the partition.
        return ".rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)"
    method = "rowsBetween" if frame.mode == "rows" else "rangeBetween"
    return f".{method}({_bound(frame.start)}, {_bound(frame.end)})"


def _bound(bound: FrameBound) -> str:
    if bound.kind == "unbounded_preceding":
        return "Window.unboundedPreceding"
    if bound.kind == "unbounded_following":
        return "Window.unboundedFollowing"
    if bound.kind == "current_row":
        return "Window.currentRow"
    offset = bound.offset.value if isinstance(bound.offset, Literal) else bound.offset
    if not isinstance(offset, int):
        raise PlanError(f"the Spark engine supports only integer frame offsets (got {bound})")
    return str(-offset if bound.kind == "preceding" else offset)
