"""Planner expressions -> PySpark ``Column`` source text.

Every rendered expression is an atom (a call, a method chain or a parenthesized operation),
so a caller can append ``.cast(...)``, ``.alias(...)`` or ``.over(...)`` without worrying
about precedence. Column references become ``F.col('<internal name>')`` through the
program's naming, never the display name, so equal display names never clash.

Scalar functions are looked up by canonical name in ``functions.SCALAR``; aggregates and
window functions are rendered by ``aggregates``. A name missing from a registry is a
PlanError naming the function, raised while compiling, before Spark runs anything.
"""

from __future__ import annotations

from collections.abc import Callable

from flowsql.errors import PlanError
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    ColumnRef,
    Expr,
    Literal,
    SortKey,
    UdfCall,
    WindowCall,
    render,
)
from flowsql.spark import aggregates, functions
from flowsql.spark.literals import cast, convert, literal
from flowsql.spark.spark_types import spark_type


class Renderer:
    """Renders expressions whose column references resolve through ``column_name``."""

    def __init__(self, column_name: Callable[[int], str]) -> None:
        self.column_name = column_name

    def col(self, cid: int) -> str:
        return f"F.col({self.column_name(cid)!r})"

    def render(self, e: Expr) -> str:
        if isinstance(e, ColumnRef):
            return self.col(e.cid)
        if isinstance(e, Literal):
            return literal(e.value, e.dtype)
        if isinstance(e, Cast):
            return convert(self.render(e.arg), e.arg.dtype, e.dtype)
        if isinstance(e, Case):
            text = "F"
            for condition, value in zip(e.conditions, e.values):
                text += f".when({self.render(condition)}, {self.render(value)})"
            text += f".otherwise({self.render(e.otherwise)})"
            return cast(text, e.dtype)
        if isinstance(e, UdfCall):
            args = ", ".join(self.render(a) for a in e.args)
            udf = (f"FU.scalar_udf({e.function.path!r}, {e.function.name!r}, "
                   f"{spark_type(e.dtype)!r})")
            return cast(f"{udf}({args})", e.dtype)
        if isinstance(e, Call):
            fn = functions.SCALAR.get(e.name)
            if fn is None:
                raise PlanError(f"the Spark engine does not support function '{e.name}' "
                                f"(in {render(e)})")
            return fn(self, e)
        if isinstance(e, AggCall):
            return aggregates.aggregate(self, e)
        if isinstance(e, WindowCall):
            return aggregates.window(self, e)
        raise PlanError(f"the Spark engine cannot compile the expression {render(e)} "
                        f"({type(e).__name__})")

    def sort_key(self, key: SortKey) -> str:
        direction = "asc" if key.ascending else "desc"
        nulls = "first" if key.nulls_first else "last"
        return f"{self.render(key.expr)}.{direction}_nulls_{nulls}()"
