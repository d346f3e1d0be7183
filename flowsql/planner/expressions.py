"""Bound, typed, immutable expressions.

A column reference names a column by its id (``cid``): every column produced anywhere in a
plan gets a fresh id, so a reference means the same column in every node that carries it, and
rewrites (pushdown, pruning, decorrelation) never re-resolve names. ``name`` is only for
display. A reference whose id the current subplan does not produce is an outer (correlated)
reference.

Scalar functions are one node type, :class:`Call`, with a canonical function name; the
runtime and the Spark compiler each keep a registry from name to implementation (see
``FUNCTIONS`` for the names and their arity).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from flowsql.planner import types as T
from flowsql.planner.udf import UserFunction

if TYPE_CHECKING:
    from flowsql.planner.logical import LogicalPlan

_column_ids = itertools.count(1)


def new_cid() -> int:
    """A column id never used before in this process."""
    return next(_column_ids)


class Expr:
    """Base of all expressions. Subclasses are frozen dataclasses with a ``dtype``."""

    dtype: pa.DataType

    def children(self) -> tuple[Expr, ...]:
        return ()

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return self

    def __str__(self) -> str:
        return render(self)


@dataclass(frozen=True, slots=True)
class ColumnRef(Expr):
    cid: int
    name: str
    dtype: pa.DataType = field(compare=False)


@dataclass(frozen=True, slots=True)
class Literal(Expr):
    """A constant. ``value`` is a Python value (None for NULL) of the Arrow type ``dtype``."""

    value: Any
    dtype: pa.DataType


@dataclass(frozen=True, slots=True)
class Call(Expr):
    """A scalar function or operator: ``name`` is a key of ``FUNCTIONS``."""

    name: str
    args: tuple[Expr, ...]
    dtype: pa.DataType

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, args=tuple(children))


@dataclass(frozen=True, slots=True)
class Cast(Expr):
    arg: Expr
    dtype: pa.DataType

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, arg=children[0])


@dataclass(frozen=True, slots=True)
class Case(Expr):
    """Searched CASE: the first true condition picks its value; else ``otherwise`` or NULL."""

    conditions: tuple[Expr, ...]
    values: tuple[Expr, ...]
    otherwise: Expr
    dtype: pa.DataType

    def children(self) -> tuple[Expr, ...]:
        return (*self.conditions, *self.values, self.otherwise)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        n = len(self.conditions)
        return replace(self, conditions=tuple(children[:n]), values=tuple(children[n:2 * n]),
                       otherwise=children[2 * n])


@dataclass(frozen=True, slots=True)
class SortKey:
    expr: Expr
    ascending: bool = True
    nulls_first: bool = False

    def __str__(self) -> str:
        order = "ASC" if self.ascending else "DESC"
        nulls = "NULLS FIRST" if self.nulls_first else "NULLS LAST"
        return f"{render(self.expr)} {order} {nulls}"


@dataclass(frozen=True, slots=True)
class UdfCall(Expr):
    """A call of a user-defined scalar function (see :mod:`flowsql.planner.udf`)."""

    function: UserFunction
    args: tuple[Expr, ...]
    dtype: pa.DataType

    def children(self) -> tuple[Expr, ...]:
        return self.args

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, args=tuple(children))


@dataclass(frozen=True, slots=True)
class AggCall(Expr):
    """An aggregate inside an Aggregate node: sum, count, count_star, avg, min, max,
    stddev_samp, stddev_pop, var_samp, var_pop, bool_and, bool_or, any_value.
    ``filter`` restricts the rows the aggregate sees (FILTER (WHERE ...))."""

    name: str
    args: tuple[Expr, ...]
    dtype: pa.DataType
    distinct: bool = False
    filter: Expr | None = None
    #: the user-defined aggregate this call runs (``name`` is then its registered name)
    function: UserFunction | None = None

    def children(self) -> tuple[Expr, ...]:
        return self.args + ((self.filter,) if self.filter is not None else ())

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        n = len(self.args)
        return replace(self, args=tuple(children[:n]),
                       filter=children[n] if self.filter is not None else None)


@dataclass(frozen=True, slots=True)
class FrameBound:
    """``kind`` is one of unbounded_preceding, preceding, current_row, following,
    unbounded_following; ``offset`` is the literal for preceding/following."""

    kind: str
    offset: Any = None

    def __str__(self) -> str:
        if self.kind in ("preceding", "following"):
            return f"{self.offset} {self.kind.upper()}"
        return self.kind.replace("_", " ").upper()


@dataclass(frozen=True, slots=True)
class Frame:
    """A window frame: ``mode`` is rows or range."""

    mode: str
    start: FrameBound
    end: FrameBound

    def __str__(self) -> str:
        return f"{self.mode.upper()} BETWEEN {self.start} AND {self.end}"


@dataclass(frozen=True, slots=True)
class WindowCall(Expr):
    """A window function: row_number, rank, dense_rank, percent_rank, cume_dist, ntile,
    lag, lead, first_value, last_value, nth_value, or an aggregate name with a frame.

    ``frame`` is None for ranking and offset functions; for aggregates the binder fills in
    the SQL default (RANGE UNBOUNDED PRECEDING .. CURRENT ROW with ORDER BY, the whole
    partition without). ``function`` is set for a user-defined aggregate over a window
    (``name`` is then its registered name)."""

    name: str
    args: tuple[Expr, ...]
    partition_by: tuple[Expr, ...]
    order_by: tuple[SortKey, ...]
    frame: Frame | None
    dtype: pa.DataType
    distinct: bool = False
    function: UserFunction | None = None

    def children(self) -> tuple[Expr, ...]:
        return self.args + self.partition_by + tuple(k.expr for k in self.order_by)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        a, p = len(self.args), len(self.partition_by)
        keys = tuple(replace(k, expr=e) for k, e in zip(self.order_by, children[a + p:]))
        return replace(self, args=tuple(children[:a]), partition_by=tuple(children[a:a + p]),
                       order_by=keys)


@dataclass(frozen=True, slots=True, eq=False)
class ScalarSubquery(Expr):
    """A subquery yielding one column and at most one row; removed by decorrelation."""

    plan: LogicalPlan
    dtype: pa.DataType


@dataclass(frozen=True, slots=True, eq=False)
class Exists(Expr):
    plan: LogicalPlan
    dtype: pa.DataType = T.BOOL


@dataclass(frozen=True, slots=True, eq=False)
class InSubquery(Expr):
    """``arg IN (plan)`` with SQL's three-valued result; NOT IN is ``not`` of it."""

    arg: Expr
    plan: LogicalPlan
    dtype: pa.DataType = T.BOOL

    def children(self) -> tuple[Expr, ...]:
        return (self.arg,)

    def with_children(self, children: tuple[Expr, ...]) -> Expr:
        return replace(self, arg=children[0])


SUBQUERY_TYPES = (ScalarSubquery, Exists, InSubquery)

# Canonical scalar function names -> (min args, max args or None for variadic).
FUNCTIONS: dict[str, tuple[int, int | None]] = {
    # arithmetic
    "add": (2, 2), "subtract": (2, 2), "multiply": (2, 2), "divide": (2, 2),
    "modulo": (2, 2), "negate": (1, 1),
    # comparison
    "eq": (2, 2), "neq": (2, 2), "lt": (2, 2), "lte": (2, 2), "gt": (2, 2), "gte": (2, 2),
    "is_distinct_from": (2, 2), "is_not_distinct_from": (2, 2),
    # logic and nulls
    "and": (2, None), "or": (2, None), "not": (1, 1),
    "is_null": (1, 1), "is_not_null": (1, 1), "is_true": (1, 1), "is_false": (1, 1),
    "coalesce": (1, None), "nullif": (2, 2),
    # in_list(x, v1, v2, ...): three-valued like x = v1 OR x = v2 ...
    "in_list": (2, None),
    # strings
    "like": (2, 3), "ilike": (2, 3), "concat": (1, None), "substring": (2, 3),
    "upper": (1, 1), "lower": (1, 1), "trim": (1, 1), "ltrim": (1, 1), "rtrim": (1, 1),
    "length": (1, 1), "replace": (3, 3), "strpos": (2, 2), "starts_with": (2, 2),
    "ends_with": (2, 2), "left": (2, 2), "right": (2, 2), "reverse": (1, 1),
    "lpad": (3, 3), "rpad": (3, 3), "repeat": (2, 2), "split_part": (3, 3),
    "regexp_matches": (2, 2), "contains": (2, 2),
    # math
    "abs": (1, 1), "round": (1, 2), "floor": (1, 1), "ceil": (1, 1), "sqrt": (1, 1),
    "power": (2, 2), "ln": (1, 1), "log10": (1, 1), "exp": (1, 1), "sign": (1, 1),
    "greatest": (1, None), "least": (1, None),
    # date/time: extract(field) is one function per field so the evaluator maps directly
    "extract_year": (1, 1), "extract_quarter": (1, 1), "extract_month": (1, 1),
    "extract_day": (1, 1), "extract_hour": (1, 1), "extract_minute": (1, 1),
    "extract_second": (1, 1), "extract_dow": (1, 1), "extract_doy": (1, 1),
    "extract_week": (1, 1), "extract_epoch": (1, 1),
    # date_trunc(unit literal, x)
    "date_trunc": (2, 2),
    # Flink's built-in functions (unit arguments are string literals, patterns are Java's)
    "timestampdiff": (3, 3), "ceil_temporal": (2, 2), "date_format": (2, 2),
    "from_unixtime": (1, 2), "to_timestamp": (1, 2), "to_date": (1, 2),
    "unix_timestamp": (1, 3), "to_timestamp_ltz": (1, 2),
    # the session time zone, bound as a string literal (``sql.bind_time_zone``)
    "ltz_to_local": (2, 2), "local_to_ltz": (2, 2),
    "concat_ws": (1, None), "initcap": (1, 1), "locate": (2, 3), "split_index": (3, 3),
    "regexp_extract": (2, 3), "regexp_replace": (3, 3), "trim_chars": (2, 2),
    "ltrim_chars": (2, 2), "rtrim_chars": (2, 2), "ascii": (1, 1), "chr": (1, 1),
    "overlay": (3, 4), "is_alpha": (1, 1), "is_digit": (1, 1), "is_decimal": (1, 1),
    "md5": (1, 1), "sha1": (1, 1), "sha2": (2, 2), "sha224": (1, 1), "sha256": (1, 1),
    "sha384": (1, 1), "sha512": (1, 1), "to_base64": (1, 1), "from_base64": (1, 1),
    "json_value": (2, 2), "json_query": (2, 2), "json_exists": (2, 2),
    "log": (2, 2), "truncate": (1, 2), "try_cast": (1, 1),
    "sin": (1, 1), "cos": (1, 1), "tan": (1, 1), "cot": (1, 1), "asin": (1, 1),
    "acos": (1, 1), "atan": (1, 1), "atan2": (2, 2), "sinh": (1, 1), "cosh": (1, 1),
    "tanh": (1, 1), "degrees": (1, 1), "radians": (1, 1),
}


def walk(expr: Expr) -> Iterator[Expr]:
    """Pre-order traversal; does not descend into subquery plans."""
    yield expr
    for child in expr.children():
        yield from walk(child)


def transform(expr: Expr, fn: Callable[[Expr], Expr | None]) -> Expr:
    """Bottom-up rewrite: ``fn`` sees each node after its children were rewritten and
    returns a replacement or None to keep it."""
    children = expr.children()
    if children:
        new_children = tuple(transform(c, fn) for c in children)
        if any(a is not b for a, b in zip(new_children, children)):
            expr = expr.with_children(new_children)
    result = fn(expr)
    return expr if result is None else result


def column_ids(expr: Expr) -> set[int]:
    """Ids of the columns an expression reads (outside subquery plans)."""
    return {e.cid for e in walk(expr) if isinstance(e, ColumnRef)}


def replace_columns(expr: Expr, mapping: dict[int, Expr]) -> Expr:
    """Substitute column references by id."""
    if not mapping:
        return expr
    return transform(expr, lambda e: mapping.get(e.cid) if isinstance(e, ColumnRef) else None)


def contains_subquery(expr: Expr) -> bool:
    return any(isinstance(e, SUBQUERY_TYPES) for e in walk(expr))


def contains_aggregate(expr: Expr) -> bool:
    return any(isinstance(e, AggCall) for e in walk(expr))


def conjuncts(expr: Expr | None) -> list[Expr]:
    """Split a predicate at top-level ANDs."""
    if expr is None:
        return []
    if isinstance(expr, Call) and expr.name == "and":
        out: list[Expr] = []
        for a in expr.args:
            out.extend(conjuncts(a))
        return out
    return [expr]


def conjoin(preds: list[Expr] | tuple[Expr, ...]) -> Expr | None:
    """AND the predicates together (None for none)."""
    preds = [p for p in preds if not (isinstance(p, Literal) and p.value is True)]
    if not preds:
        return None
    if len(preds) == 1:
        return preds[0]
    return Call("and", tuple(preds), T.BOOL)


def disjoin(preds: list[Expr]) -> Expr:
    return preds[0] if len(preds) == 1 else Call("or", tuple(preds), T.BOOL)


def lit(value: Any, dtype: pa.DataType | None = None) -> Literal:
    if dtype is None:
        dtype = pa.scalar(value).type if value is not None else T.NULL
    return Literal(value, dtype)


TRUE = Literal(True, T.BOOL)


_INFIX = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%",
    "eq": "=", "neq": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">=",
    "and": "AND", "or": "OR", "like": "LIKE", "ilike": "ILIKE",
    "is_distinct_from": "IS DISTINCT FROM", "is_not_distinct_from": "IS NOT DISTINCT FROM",
}


def _render_literal(e: Literal) -> str:
    if e.value is None:
        return "NULL"
    if T.is_string(e.dtype):
        return "'" + str(e.value).replace("'", "''") + "'"
    if pa.types.is_date(e.dtype):
        return f"DATE '{e.value}'"
    if pa.types.is_timestamp(e.dtype):
        return f"TIMESTAMP '{e.value}'"
    if pa.types.is_boolean(e.dtype):
        return "TRUE" if e.value else "FALSE"
    if T.is_interval(e.dtype):
        months, days, nanos = e.value
        parts = []
        if months:
            parts.append(f"{months} MONTH")
        if days:
            parts.append(f"{days} DAY")
        if nanos or not parts:
            parts.append(f"{nanos / 1e9:g} SECOND")
        return "INTERVAL '" + " ".join(parts) + "'"
    return str(e.value)


def render(e: Expr) -> str:
    """Deterministic SQL-like text of an expression, for EXPLAIN and error messages."""
    if isinstance(e, ColumnRef):
        return e.name
    if isinstance(e, Literal):
        return _render_literal(e)
    if isinstance(e, Cast):
        return f"CAST({render(e.arg)} AS {T.sql_name(e.dtype)})"
    if isinstance(e, Case):
        whens = " ".join(f"WHEN {render(c)} THEN {render(v)}"
                         for c, v in zip(e.conditions, e.values))
        return f"CASE {whens} ELSE {render(e.otherwise)} END"
    if isinstance(e, Call):
        if e.name in ("like", "ilike") and len(e.args) == 3:
            a, p, esc = (render(x) for x in e.args)
            return f"({a} {e.name.upper()} {p} ESCAPE {esc})"
        if e.name in _INFIX:
            return "(" + f" {_INFIX[e.name]} ".join(render(a) for a in e.args) + ")"
        if e.name == "not":
            return f"NOT {render(e.args[0])}"
        if e.name == "negate":
            return f"-{render(e.args[0])}"
        if e.name in ("is_null", "is_not_null", "is_true", "is_false"):
            return f"{render(e.args[0])} {e.name.replace('_', ' ').upper()}"
        if e.name == "in_list":
            return f"{render(e.args[0])} IN ({', '.join(render(a) for a in e.args[1:])})"
        return f"{e.name}({', '.join(render(a) for a in e.args)})"
    if isinstance(e, UdfCall):
        return f"{e.function.name}({', '.join(render(a) for a in e.args)})"
    if isinstance(e, AggCall):
        inner = "*" if e.name == "count_star" else ", ".join(render(a) for a in e.args)
        name = "count" if e.name == "count_star" else e.name
        if e.function is not None and e.function.step:  # a split class-form aggregate
            name = f"{name}[{e.function.step}]"
        text = f"{name}({'DISTINCT ' if e.distinct else ''}{inner})"
        if e.filter is not None:
            text += f" FILTER (WHERE {render(e.filter)})"
        return text
    if isinstance(e, WindowCall):
        over = []
        if e.partition_by:
            over.append("PARTITION BY " + ", ".join(render(p) for p in e.partition_by))
        if e.order_by:
            over.append("ORDER BY " + ", ".join(str(k) for k in e.order_by))
        if e.frame is not None:
            over.append(str(e.frame))
        args = ", ".join(render(a) for a in e.args)
        return f"{e.name}({args}) OVER ({' '.join(over)})"
    if isinstance(e, ScalarSubquery):
        return "(subquery)"
    if isinstance(e, Exists):
        return "EXISTS(subquery)"
    if isinstance(e, InSubquery):
        return f"{render(e.arg)} IN (subquery)"
    return repr(e)
