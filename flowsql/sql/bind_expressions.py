"""Binding SQL expressions (sqlglot AST) to typed planner expressions.

Implicit conversions are made explicit here (casts to a common type for comparisons,
arithmetic, CASE, IN, COALESCE), so the runtime never guesses. Literal casts are folded.
Aggregate and window calls are bound in place (AggCall / WindowCall); the query binder then
lifts them into Aggregate and Window nodes. Subqueries are bound by the query binder through
``bind_subquery`` with the current scope as their outer scope.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from flowsql.errors import BindError
from flowsql.planner import types as T
from flowsql.planner.expressions import (
    AggCall,
    Call,
    Case,
    Cast,
    ColumnRef,
    Exists,
    Expr,
    Frame,
    FrameBound,
    InSubquery,
    Literal,
    ScalarSubquery,
    SortKey,
    WindowCall,
)
from flowsql.planner.logical import LogicalPlan, Project
from flowsql.planner.schema import Field
from flowsql.planner.udf import AGGREGATE
from flowsql.planner.udf_registry import FunctionRegistry
from flowsql.sql import functions as F
from flowsql.sql.bind_special_functions import SPECIAL, try_cast
from flowsql.sql.bind_time_zone import is_ltz, to_instant, to_local, zoned_cast
from flowsql.sql.bind_user_functions import bind_user_call
from flowsql.sql.literals import cast_value, interval_value, number_literal
from flowsql.sql.positions import node_position
from flowsql.sql.scope import Scope
from flowsql.sql.sql_types import to_arrow_type

SubqueryBinder = Callable[[exp.Expression, Scope], LogicalPlan]

_COMPARISONS = {exp.EQ: "eq", exp.NEQ: "neq", exp.LT: "lt", exp.LTE: "lte", exp.GT: "gt",
                exp.GTE: "gte", exp.NullSafeEQ: "is_not_distinct_from",
                exp.NullSafeNEQ: "is_distinct_from"}
_ARITHMETIC = {exp.Add: ("add", "+"), exp.Sub: ("subtract", "-"), exp.Mul: ("multiply", "*"),
               exp.Div: ("divide", "/"), exp.Mod: ("modulo", "%")}
_EXTRACT_FIELDS = {"year": "extract_year", "quarter": "extract_quarter",
                   "month": "extract_month", "day": "extract_day", "hour": "extract_hour",
                   "minute": "extract_minute", "second": "extract_second",
                   "dow": "extract_dow", "dayofweek": "extract_dow", "doy": "extract_doy",
                   "dayofyear": "extract_doy", "week": "extract_week",
                   "epoch": "extract_epoch"}


def _key(name: str) -> str:
    return name.lower().replace("_", "")


_AGG_BY_KEY = {_key(k): v for k, v in F.AGGREGATES.items()}
_AGG_BY_KEY.update({"stddevsamp": "stddev_samp", "stddevpop": "stddev_pop",
                    "variancesamp": "var_samp", "variancepop": "var_pop",
                    "logicaland": "bool_and", "logicalor": "bool_or", "anyvalue": "any_value"})
_WINDOW_BY_KEY = {_key(k): v for k, v in F.WINDOW_ONLY.items()}
_SCALAR_BY_KEY = {_key(k): v for k, v in F.SCALAR_ALIASES.items()}
_SCALAR_BY_KEY["strposition"] = "strpos"  # sqlglot's node for POSITION(x IN y) and STRPOS


def function_key(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return _key(node.name)
    return _key(node.key)


def builtin_function_key(node: exp.Expression) -> bool:
    """Whether a call node names a built-in (aggregate, window-only, scalar or special)."""
    key = function_key(node)
    return key in _AGG_BY_KEY or key in _WINDOW_BY_KEY or key in _SCALAR_BY_KEY \
        or key in SPECIAL or key == "filter"


def builtin_function_names() -> list[str]:
    """The built-in function names as SQL spells them (SHOW FUNCTIONS), sorted."""
    names = set(F.SCALAR_ALIASES) | set(F.AGGREGATES) | set(F.WINDOW_ONLY)
    spelled = {_key(n): n for n in (*names, "current_timestamp", "current_date",
                                    "localtimestamp", "timestampadd", "timestampdiff",
                                    "regexp_extract", "regexp_replace", "dayofyear",
                                    "dayofmonth", "dayofweek", "typeof", "overlay")}
    names |= {spelled.get(key, key) for key in SPECIAL if key != "strposition"}
    return sorted(names)


def is_aggregate_node(node: exp.Expression) -> bool:
    return isinstance(node, exp.Func) and not isinstance(node, exp.Window) and \
        function_key(node) in _AGG_BY_KEY


def contains_aggregate_ast(node: exp.Expression) -> bool:
    """Whether an aggregate call appears in ``node`` outside subqueries and window calls."""
    if is_aggregate_node(node):
        parent = node.parent
        return not isinstance(parent, exp.Window)
    if isinstance(node, exp.Subquery | exp.Select | exp.Exists):
        return False
    if isinstance(node, exp.Window):
        inner = node.this
        return any(contains_aggregate_ast(a) for a in inner.args.values()
                   if isinstance(a, exp.Expression)) or any(
            contains_aggregate_ast(p) for p in node.args.get("partition_by") or []) or (
            node.args.get("order") is not None and contains_aggregate_ast(node.args["order"]))
    return any(contains_aggregate_ast(c) for c in node.iter_expressions())


class ExpressionBinder:
    """Binds expressions of one query block against a scope. ``time_zone`` is the session's
    ``table.local-time-zone`` (normalized); conversions between instants and wall-clock
    values carry it into the plan (``sql.bind_time_zone``)."""

    def __init__(self, sql: str, bind_subquery: SubqueryBinder, time_zone: str = "UTC",
                 functions: FunctionRegistry | None = None) -> None:
        self.sql = sql
        self.bind_subquery = bind_subquery
        self.time_zone = time_zone
        #: the user-defined functions calls may name (None: none)
        self.functions = functions
        self._query_start: dt.datetime | None = None

    def query_start(self) -> dt.datetime:
        """The instant the clock functions of this query read (TIMESTAMP(3), UTC): taken at
        the first reading and kept, so every clock function of a query sees the same time."""
        if self._query_start is None:
            now = dt.datetime.now(dt.UTC)
            self._query_start = now.replace(microsecond=now.microsecond // 1000 * 1000)
        return self._query_start

    # -- errors and coercion -------------------------------------------------------------
    def error(self, message: str, node: exp.Expression | None) -> BindError:
        line, col = node_position(node)
        return BindError(message, line, col, self.sql)

    def coerce(self, expr: Expr, target: pa.DataType, node: exp.Expression | None = None) -> Expr:
        """``expr`` as ``target``: unchanged, a folded literal, or a Cast."""
        if expr.dtype.equals(target):
            return expr
        try:
            zoned = zoned_cast(expr, target, self.time_zone)
            if zoned is not None:
                return zoned
            if isinstance(expr, Literal):
                return Literal(cast_value(expr.value, expr.dtype, target), target)
        except ValueError:
            raise self.error(f"cannot cast {expr} to {T.sql_name(target)}", node) from None
        return Cast(expr, target)

    def unify(self, exprs: list[Expr], nodes: list[exp.Expression], what: str) -> list[Expr]:
        """Cast all expressions to their common type (CASE branches, IN lists, ...)."""
        target = exprs[0].dtype
        for e, n in zip(exprs[1:], nodes[1:]):
            common = T.common_type(target, e.dtype)
            if common is None:
                raise self.error(f"{what}: cannot combine {T.sql_name(target)} and "
                                 f"{T.sql_name(e.dtype)} in '{n.sql()}'", n)
            target = common
        return [self.coerce(e, target, n) for e, n in zip(exprs, nodes)]

    def boolean(self, expr: Expr, node: exp.Expression) -> Expr:
        if pa.types.is_boolean(expr.dtype):
            return expr
        if T.is_null(expr.dtype):
            return Literal(None, T.BOOL)
        raise self.error(f"expected a boolean expression, got {T.sql_name(expr.dtype)} in "
                         f"'{node.sql()}'", node)

    # -- entry point ---------------------------------------------------------------------
    def bind(self, node: exp.Expression, scope: Scope) -> Expr:
        if isinstance(node, exp.Func) and not isinstance(node, exp.Window):
            special = SPECIAL.get(function_key(node))
            bound = special(self, node, scope) if special is not None else None
            if bound is not None:
                return bound
        method = getattr(self, "_bind_" + type(node).__name__.lower(), None)
        if method is not None:
            return method(node, scope)
        for cls, (name, _) in _ARITHMETIC.items():
            if isinstance(node, cls):
                return self._arithmetic(name, node, scope)
        for cls, name in _COMPARISONS.items():
            if isinstance(node, cls):
                return self._comparison(name, node.this, node.expression, scope, node)
        if isinstance(node, exp.Func):
            return self._function(node, scope)
        raise self.error(f"unsupported expression '{node.sql()}'", node)

    # -- leaves --------------------------------------------------------------------------
    def _bind_column(self, node: exp.Column, scope: Scope) -> Expr:
        if isinstance(node.this, exp.Star):
            raise self.error("'*' is only allowed in the select list or COUNT(*)", node)
        return scope.resolve(node, self.sql).ref()

    def _bind_literal(self, node: exp.Literal, scope: Scope) -> Expr:
        if node.is_string:
            return Literal(node.this, T.STRING)
        return number_literal(node.this)

    def _bind_boolean(self, node: exp.Boolean, scope: Scope) -> Expr:
        return Literal(bool(node.this), T.BOOL)

    def _bind_null(self, node: exp.Null, scope: Scope) -> Expr:
        return Literal(None, T.NULL)

    def _bind_paren(self, node: exp.Paren, scope: Scope) -> Expr:
        return self.bind(node.this, scope)

    def _bind_neg(self, node: exp.Neg, scope: Scope) -> Expr:
        inner = node.this
        if isinstance(inner, exp.Literal) and not inner.is_string:
            return number_literal("-" + inner.this)
        arg = self.bind(inner, scope)
        if not (T.is_numeric(arg.dtype) or T.is_interval(arg.dtype) or T.is_null(arg.dtype)):
            raise self.error(f"cannot negate {T.sql_name(arg.dtype)} in '{node.sql()}'", node)
        return Call("negate", (arg,), arg.dtype)

    def _bind_interval(self, node: exp.Interval, scope: Scope) -> Expr:
        unit = node.args.get("unit")
        amount = node.this
        try:
            if isinstance(amount, exp.Literal):
                text = amount.this
            elif isinstance(amount, exp.Neg) and isinstance(amount.this, exp.Literal):
                text = "-" + amount.this.this
            else:
                raise ValueError("interval amount must be a literal")
            value = interval_value(str(text), unit.name if unit is not None else None)
        except (ValueError, ArithmeticError) as e:
            raise self.error(f"invalid interval '{node.sql()}': {e}", node) from None
        return Literal(value, T.INTERVAL)

    # -- operators -----------------------------------------------------------------------
    def _arithmetic(self, name: str, node: exp.Expression, scope: Scope) -> Expr:
        left = self.bind(node.this, scope)
        right = self.bind(node.expression, scope)
        op = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "modulo": "%"}[name]
        if T.is_string(left.dtype) and T.is_temporal(right.dtype) and isinstance(left, Literal):
            left = self.coerce(left, right.dtype, node.this)
        if T.is_string(right.dtype) and T.is_temporal(left.dtype) and isinstance(right, Literal):
            right = self.coerce(right, left.dtype, node.expression)
        left, right = self._widen_date_for_time_interval(op, left, right)
        result = T.arithmetic_type(op, left.dtype, right.dtype)
        if result is None:
            raise self.error(f"cannot apply '{op}' to {T.sql_name(left.dtype)} and "
                             f"{T.sql_name(right.dtype)} in '{node.sql()}'", node)
        if T.is_numeric(left.dtype) and T.is_numeric(right.dtype) or \
                T.is_null(left.dtype) or T.is_null(right.dtype):
            left, right = self._numeric_operands(op, left, right, result)
        return Call(name, (left, right), result)

    @staticmethod
    def _widen_date_for_time_interval(op: str, left: Expr, right: Expr) -> tuple[Expr, Expr]:
        """A date plus an interval with hours/minutes/seconds is a timestamp (DuckDB)."""
        def has_time(e: Expr) -> bool:
            return isinstance(e, Literal) and T.is_interval(e.dtype) and e.value is not None \
                and e.value[2] != 0
        if op in "+-" and pa.types.is_date(left.dtype) and has_time(right):
            left = Cast(left, pa.timestamp("us"))
        elif op == "+" and pa.types.is_date(right.dtype) and has_time(left):
            right = Cast(right, pa.timestamp("us"))
        return left, right

    def _numeric_operands(self, op: str, left: Expr, right: Expr,
                          result: pa.DataType) -> tuple[Expr, Expr]:
        """Make both operands the kernel's input type: float64 for float results, int64 for
        integer results, decimals (integers widened to exact decimals) for decimal results."""
        def prep(e: Expr) -> Expr:
            if T.is_null(e.dtype):
                return Literal(None, result if not T.is_decimal(result) else result)
            if T.is_float(result):
                return self.coerce(e, T.FLOAT64)
            if T.is_integer(result):
                return self.coerce(e, T.INT64)
            if T.is_decimal(result) and T.is_integer(e.dtype):
                return self.coerce(e, T.integer_as_decimal(e.dtype))
            return e
        return prep(left), prep(right)

    def _comparison(self, name: str, lnode: exp.Expression, rnode: exp.Expression,
                    scope: Scope, node: exp.Expression) -> Expr:
        left = self.bind(lnode, scope)
        right = self.bind(rnode, scope)
        common = T.common_type(left.dtype, right.dtype)
        if common is None:
            raise self.error(f"cannot compare {T.sql_name(left.dtype)} with "
                             f"{T.sql_name(right.dtype)} in '{node.sql()}'", node)
        return Call(name, (self.coerce(left, common, lnode), self.coerce(right, common, rnode)),
                    T.BOOL)

    def _bind_and(self, node: exp.And, scope: Scope) -> Expr:
        return Call("and", (self.boolean(self.bind(node.this, scope), node.this),
                            self.boolean(self.bind(node.expression, scope), node.expression)),
                    T.BOOL)

    def _bind_or(self, node: exp.Or, scope: Scope) -> Expr:
        return Call("or", (self.boolean(self.bind(node.this, scope), node.this),
                           self.boolean(self.bind(node.expression, scope), node.expression)),
                    T.BOOL)

    def _bind_not(self, node: exp.Not, scope: Scope) -> Expr:
        return Call("not", (self.boolean(self.bind(node.this, scope), node.this),), T.BOOL)

    def _bind_is(self, node: exp.Is, scope: Scope) -> Expr:
        arg = self.bind(node.this, scope)
        target = node.expression
        if isinstance(target, exp.Null):
            return Call("is_null", (arg,), T.BOOL)
        if isinstance(target, exp.Boolean):
            return Call("is_true" if target.this else "is_false",
                        (self.boolean(arg, node.this),), T.BOOL)
        raise self.error(f"unsupported IS form '{node.sql()}'", node)

    def _bind_between(self, node: exp.Between, scope: Scope) -> Expr:
        low = self._comparison("gte", node.this, node.args["low"], scope, node)
        high = self._comparison("lte", node.this, node.args["high"], scope, node)
        return Call("and", (low, high), T.BOOL)

    def _bind_like(self, node: exp.Like, scope: Scope, escape: Expr | None = None,
                   name: str = "like") -> Expr:
        value = self.bind(node.this, scope)
        pattern = self.bind(node.expression, scope)
        for e, n in ((value, node.this), (pattern, node.expression)):
            if not (T.is_string(e.dtype) or T.is_null(e.dtype)):
                raise self.error(f"{name.upper()} needs strings, got {T.sql_name(e.dtype)} in "
                                 f"'{node.sql()}'", n)
        args: tuple[Expr, ...] = (self.coerce(value, T.STRING), self.coerce(pattern, T.STRING))
        if escape is not None:
            args = (*args, escape)
        call = Call(name, args, T.BOOL)
        # sqlglot spells NOT LIKE as a flag on the Like node rather than a Not above it
        return Call("not", (call,), T.BOOL) if node.args.get("negate") else call

    def _bind_ilike(self, node: exp.ILike, scope: Scope) -> Expr:
        return self._bind_like(node, scope, name="ilike")  # type: ignore[arg-type]

    def _bind_escape(self, node: exp.Escape, scope: Scope) -> Expr:
        inner = node.this
        escape = self.bind(node.expression, scope)
        name = "ilike" if isinstance(inner, exp.ILike) else "like"
        return self._bind_like(inner, scope, escape=escape, name=name)

    def _bind_dpipe(self, node: exp.DPipe, scope: Scope) -> Expr:
        """``a || b`` is NULL when either side is (unlike concat(), which skips NULLs)."""
        args = tuple(self.coerce(self.bind(n, scope), T.STRING)
                     for n in (node.this, node.expression))
        either_null = Call("or", tuple(Call("is_null", (a,), T.BOOL) for a in args), T.BOOL)
        return Case((either_null,), (Literal(None, T.STRING),), Call("concat", args, T.STRING),
                    T.STRING)

    def _bind_in(self, node: exp.In, scope: Scope) -> Expr:
        query = node.args.get("query")
        if query is not None:
            return self._in_subquery(node, query, scope)
        if node.args.get("unnest") or node.args.get("field"):
            raise self.error(f"unsupported IN form '{node.sql()}'", node)
        values = node.expressions
        bound = [self.bind(node.this, scope)] + [self.bind(v, scope) for v in values]
        unified = self.unify(bound, [node.this, *values], "IN list")
        return Call("in_list", tuple(unified), T.BOOL)

    def _in_subquery(self, node: exp.In, query: exp.Expression, scope: Scope) -> Expr:
        arg = self.bind(node.this, scope)
        inner = query.this if isinstance(query, exp.Subquery) else query
        plan = self.bind_subquery(inner, scope)
        if len(plan.schema) != 1:
            raise self.error(f"subquery of IN must return one column, it returns "
                             f"{len(plan.schema)}", query)
        column = plan.schema[0]
        common = T.common_type(arg.dtype, column.dtype)
        if common is None:
            raise self.error(f"cannot compare {T.sql_name(arg.dtype)} with subquery column of "
                             f"type {T.sql_name(column.dtype)}", node)
        if not column.dtype.equals(common):
            out = Field.fresh(column.name, common)
            plan = Project(plan, (Cast(column.ref(), common),), (out,))
        return InSubquery(self.coerce(arg, common, node.this), plan)

    def _bind_exists(self, node: exp.Exists, scope: Scope) -> Expr:
        inner = node.this
        inner = inner.this if isinstance(inner, exp.Subquery) else inner
        return Exists(self.bind_subquery(inner, scope))

    def _bind_subquery(self, node: exp.Subquery, scope: Scope) -> Expr:
        plan = self.bind_subquery(node.this if not node.args.get("limit") else node, scope)
        if len(plan.schema) != 1:
            raise self.error(f"scalar subquery must return one column, it returns "
                             f"{len(plan.schema)}", node)
        return ScalarSubquery(plan, plan.schema[0].dtype)

    def _bind_case(self, node: exp.Case, scope: Scope) -> Expr:
        operand = node.this
        conditions: list[Expr] = []
        value_nodes: list[exp.Expression] = []
        for branch in node.args.get("ifs") or []:
            if operand is not None:
                cond = self._comparison("eq", operand, branch.this, scope, branch)
            else:
                cond = self.boolean(self.bind(branch.this, scope), branch.this)
            conditions.append(cond)
            value_nodes.append(branch.args["true"])
        default = node.args.get("default")
        values = [self.bind(v, scope) for v in value_nodes]
        otherwise = self.bind(default, scope) if default is not None else Literal(None, T.NULL)
        unified = self.unify([*values, otherwise], [*value_nodes, default or node], "CASE")
        dtype = unified[0].dtype
        return Case(tuple(conditions), tuple(unified[:-1]), unified[-1], dtype)

    def _bind_if(self, node: exp.If, scope: Scope) -> Expr:
        cond = self.boolean(self.bind(node.this, scope), node.this)
        values = [self.bind(node.args["true"], scope)]
        false = node.args.get("false")
        values.append(self.bind(false, scope) if false is not None else Literal(None, T.NULL))
        unified = self.unify(values, [node.args["true"], false or node], "IF")
        return Case((cond,), (unified[0],), unified[1], unified[0].dtype)

    def _bind_cast(self, node: exp.Cast, scope: Scope) -> Expr:
        target = to_arrow_type(node.args["to"], self.sql)
        arg = self.bind(node.this, scope)
        return self.coerce(arg, target, node)

    def _bind_trycast(self, node: exp.TryCast, scope: Scope) -> Expr:
        """Flink's TRY_CAST: NULL where CAST would fail (the zone conversion itself cannot)."""
        arg = self.bind(node.this, scope)
        target = to_arrow_type(node.args["to"], self.sql)
        if is_ltz(arg.dtype) and not is_ltz(target) and not T.is_null(target):
            return try_cast(to_local(arg, self.time_zone), target)
        if is_ltz(target) and not is_ltz(arg.dtype) and not T.is_null(arg.dtype):
            wall = try_cast(arg, pa.timestamp(target.unit))
            return to_instant(wall, self.time_zone) if not T.is_null(wall.dtype) else wall
        return try_cast(arg, target)

    def _bind_extract(self, node: exp.Extract, scope: Scope) -> Expr:
        field = node.this.name.lower()
        name = _EXTRACT_FIELDS.get(field)
        if name is None:
            raise self.error(f"unsupported EXTRACT field '{field}'", node)
        arg = self.bind(node.expression, scope)
        if T.is_string(arg.dtype) and isinstance(arg, Literal):
            arg = self.coerce(arg, T.DATE, node.expression)
        if not T.is_temporal(arg.dtype):
            raise self.error(f"EXTRACT needs a date or timestamp, got "
                             f"{T.sql_name(arg.dtype)}", node)
        dtype = T.FLOAT64 if name == "extract_epoch" else T.INT64
        if is_ltz(arg.dtype) and name != "extract_epoch":
            arg = to_local(arg, self.time_zone)
        return Call(name, (arg,), dtype)

    def _bind_trim(self, node: exp.Trim, scope: Scope) -> Expr:
        if node.args.get("expression") is not None:
            raise self.error("TRIM with characters is not supported", node)
        position = (node.args.get("position") or "BOTH").upper()
        name = {"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim")
        return Call(name, (self.coerce(self.bind(node.this, scope), T.STRING),), T.STRING)

    def _bind_pad(self, node: exp.Pad, scope: Scope) -> Expr:
        name = "lpad" if node.args.get("is_left") else "rpad"
        fill = node.args.get("fill_pattern")
        args = [node.this, node.expression] + ([fill] if fill is not None else [])
        bound = [self.bind(a, scope) for a in args]
        if len(bound) == 2:
            bound.append(Literal(" ", T.STRING))
        return self.scalar_call(name, bound, args, node)

    def _bind_datetrunc(self, node: exp.DateTrunc, scope: Scope) -> Expr:
        unit = node.args.get("unit")
        unit_name = unit.name.lower() if unit is not None else "day"
        arg = self.bind(node.this, scope)
        return Call("date_trunc", (Literal(unit_name, T.STRING), arg), arg.dtype)

    def _bind_timestamptrunc(self, node: exp.Expression, scope: Scope) -> Expr:
        return self._bind_datetrunc(node, scope)  # type: ignore[arg-type]

    def _bind_window(self, node: exp.Window, scope: Scope) -> Expr:
        return self._window(node, scope)

    def _bind_grouping(self, node: exp.Expression, scope: Scope) -> Expr:
        """GROUPING(e, ..): the aggregate binding replaces it (``sql.grouping_sets``)."""
        from flowsql.sql.grouping_sets import GroupingCall

        args = self._function_args(node)
        if not args:
            raise self.error("GROUPING needs at least one argument", node)
        return GroupingCall(tuple(self.bind(a, scope) for a in args))

    _bind_groupingid = _bind_grouping  # GROUPING_ID(e, ..): the same bits

    # -- functions -----------------------------------------------------------------------
    def _function(self, node: exp.Expression, scope: Scope) -> Expr:
        key = function_key(node)
        if isinstance(node, exp.Window):
            return self._window(node, scope)
        user = self.functions.get(node.name) if self.functions is not None \
            and isinstance(node, exp.Anonymous) else None
        if user is not None:
            return bind_user_call(self, user, node, scope)  # type: ignore[arg-type]
        if key in _AGG_BY_KEY:
            return self._aggregate(node, scope, _AGG_BY_KEY[key], None)
        if key in _WINDOW_BY_KEY:
            raise self.error(f"window function {node.sql()} needs an OVER clause", node)
        if key == "filter":
            return self._bind_filter(node, scope)  # type: ignore[arg-type]
        name = _SCALAR_BY_KEY.get(key)
        if name is None:
            shown = node.name if isinstance(node, exp.Anonymous) else node.key.upper()
            raise self.error(f"unknown function '{shown}'", node)
        arg_nodes = self._function_args(node)
        bound = [self.bind(a, scope) for a in arg_nodes]
        return self.scalar_call(name, bound, arg_nodes, node)

    @staticmethod
    def _function_args(node: exp.Expression) -> list[exp.Expression]:
        if isinstance(node, exp.Anonymous):
            return list(node.expressions)
        out: list[exp.Expression] = []
        for key in node.arg_types:
            value = node.args.get(key)
            if isinstance(value, list):
                out.extend(value)
            elif isinstance(value, exp.Expression):
                out.append(value)
        return out

    def scalar_call(self, name: str, bound: list[Expr], nodes: list[exp.Expression],
                     node: exp.Expression) -> Expr:
        from flowsql.planner.expressions import FUNCTIONS

        low, high = FUNCTIONS[name]
        if len(bound) < low or (high is not None and len(bound) > high):
            raise self.error(f"wrong number of arguments to {name}: {len(bound)}", node)
        for i in F.STRING_ARGS.get(name, ()):
            if i < len(bound):
                bound[i] = self.coerce(bound[i], T.STRING)
        for i in F.INT_ARGS.get(name, ()):
            if i < len(bound):
                if not (T.is_integer(bound[i].dtype) or T.is_null(bound[i].dtype)):
                    raise self.error(f"{name}: argument {i + 1} must be an integer", nodes[i])
                bound[i] = self.coerce(bound[i], T.INT64)
        if name in ("concat", "concat_ws"):
            bound = [self.coerce(b, T.STRING) for b in bound]
        if name in ("coalesce", "greatest", "least", "nullif"):
            bound = self.unify(bound, nodes, name.upper())
        if name in F.FLOAT_ARGS:
            bound = [self.coerce(b, T.FLOAT64) for b in bound]
        dtype = F.SCALAR_TYPES[name]([b.dtype for b in bound])
        if dtype is None:
            types = ", ".join(T.sql_name(b.dtype) for b in bound)
            raise self.error(f"function {name} does not accept ({types}) in '{node.sql()}'",
                             node)
        return self._in_time_zone(Call(name, tuple(bound), dtype))

    def _in_time_zone(self, call: Call) -> Expr:
        """Flink's functions that read or print wall-clock time, in the session zone:
        DATE_FORMAT of an instant formats its local time, FROM_UNIXTIME formats the instant
        of its epoch seconds, UNIX_TIMESTAMP reads its text as local time (its pattern and
        zone become explicit arguments)."""
        zone = Literal(self.time_zone, T.STRING)
        if call.name == "date_format" and is_ltz(call.args[0].dtype):
            return Call(call.name, (to_local(call.args[0], self.time_zone), call.args[1]),
                        call.dtype)
        if call.name == "from_unixtime":
            pattern = call.args[1] if len(call.args) > 1 \
                else Literal("yyyy-MM-dd HH:mm:ss", T.STRING)
            seconds = Cast(call.args[0], T.INT64) if not isinstance(call.args[0], Literal) \
                else call.args[0]
            instant = Call("to_timestamp_ltz", (seconds, Literal(0, T.INT64)),
                           pa.timestamp("ms", "UTC"))
            return Call("date_format", (to_local(instant, self.time_zone), pattern),
                        call.dtype)
        if call.name == "unix_timestamp":
            pattern = call.args[1] if len(call.args) > 1 \
                else Literal("yyyy-MM-dd HH:mm:ss", T.STRING)
            return Call(call.name, (call.args[0], pattern, zone), call.dtype)
        return call

    def _bind_filter(self, node: exp.Filter, scope: Scope) -> Expr:
        agg = node.this
        user = self.functions.get_kind(agg.name, AGGREGATE) if self.functions is not None \
            and isinstance(agg, exp.Anonymous) else None
        if not is_aggregate_node(agg) and user is None:
            raise self.error("FILTER applies to aggregate functions only", node)
        where = node.expression
        cond_node = where.this if isinstance(where, exp.Where) else where
        cond = self.boolean(self.bind(cond_node, scope), cond_node)
        if user is not None:
            return bind_user_call(self, user, agg, scope, cond)  # type: ignore[arg-type]
        return self._aggregate(agg, scope, _AGG_BY_KEY[function_key(agg)], cond)

    def _aggregate(self, node: exp.Expression, scope: Scope, name: str, filt: Expr | None,
                   in_window: bool = False) -> Expr:
        arg_nodes = self._function_args(node)
        distinct = False
        if len(arg_nodes) == 1 and isinstance(arg_nodes[0], exp.Distinct):
            distinct = True
            arg_nodes = list(arg_nodes[0].expressions)
        if name == "count" and (not arg_nodes or isinstance(arg_nodes[0], exp.Star)):
            return AggCall("count_star", (), T.INT64, False, filt)
        args = tuple(self.bind(a, scope) for a in arg_nodes)
        if len(args) != 1:
            raise self.error(f"{name} takes one argument", node)
        if not in_window and any(isinstance(e, AggCall) for a in args for e in _walk(a)):
            raise self.error(f"aggregate calls cannot be nested in '{node.sql()}'", node)
        dtype = F.aggregate_type(name, [a.dtype for a in args])
        if dtype is None:
            raise self.error(f"{name} does not accept {T.sql_name(args[0].dtype)} in "
                             f"'{node.sql()}'", node)
        return AggCall(name, args, dtype, distinct, filt)

    def _window(self, node: exp.Window, scope: Scope) -> Expr:
        func = node.this
        key = function_key(func)
        user = self.functions.get_kind(func.name, AGGREGATE) if self.functions is not None \
            and isinstance(func, exp.Anonymous) else None
        if user is not None:  # a user-defined aggregate over a window
            call = bind_user_call(self, user, func, scope)
            assert isinstance(call, AggCall) and user.result_type is not None
            partition = tuple(self.bind(p, scope) for p in node.args.get("partition_by") or [])
            order = self.sort_keys(node.args.get("order"), scope)
            return WindowCall(call.name, call.args, partition, order,
                              self._frame(node, call.name, bool(order)), user.result_type,
                              function=user)
        if key in _WINDOW_BY_KEY:
            name = _WINDOW_BY_KEY[key]
            arg_nodes = self._function_args(func)
            args = tuple(self.bind(a, scope) for a in arg_nodes)
            distinct = False
        elif key in _AGG_BY_KEY:
            agg = self._aggregate(func, scope, _AGG_BY_KEY[key], None, in_window=True)
            assert isinstance(agg, AggCall)
            name, args, distinct = agg.name, agg.args, agg.distinct
        else:
            raise self.error(f"'{func.sql()}' cannot be used as a window function", node)
        if name in ("lag", "lead") and len(args) == 3:
            unified = self.unify([args[0], args[2]], [arg_nodes[0], arg_nodes[2]], name)
            args = (unified[0], self.coerce(args[1], T.INT64), unified[1])
        elif name in ("lag", "lead", "ntile", "nth_value") and len(args) >= 2:
            args = (*args[:1], self.coerce(args[1], T.INT64), *args[2:])
        elif name == "ntile" and args:
            args = (self.coerce(args[0], T.INT64),)
        dtype = F.window_type(name, [a.dtype for a in args])
        if dtype is None:
            raise self.error(f"invalid arguments for window function '{func.sql()}'", node)
        partition = tuple(self.bind(p, scope) for p in node.args.get("partition_by") or [])
        order = self.sort_keys(node.args.get("order"), scope)
        frame = self._frame(node, name, bool(order))
        return WindowCall(name, args, partition, order, frame, dtype, distinct)

    def sort_keys(self, order: exp.Order | None, scope: Scope) -> tuple[SortKey, ...]:
        if order is None:
            return ()
        keys = []
        for item in order.expressions:
            expr = self.bind(item.this, scope)
            keys.append(sort_key(expr, item))
        return tuple(keys)

    def _frame(self, node: exp.Window, name: str, ordered: bool) -> Frame | None:
        if name in ("row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile",
                    "lag", "lead"):
            return None
        spec = node.args.get("spec")
        if spec is None:
            if ordered:
                return Frame("range", FrameBound("unbounded_preceding"), FrameBound("current_row"))
            return Frame("rows", FrameBound("unbounded_preceding"),
                         FrameBound("unbounded_following"))
        mode = (spec.args.get("kind") or "range").lower()
        start = self._bound(spec.args.get("start"), spec.args.get("start_side"), node)
        end_node = spec.args.get("end")
        end = self._bound(end_node, spec.args.get("end_side"), node) if end_node is not None \
            else FrameBound("current_row")
        return Frame(mode, start, end)

    def _bound(self, value: object, side: object, node: exp.Expression) -> FrameBound:
        side_name = str(side or "").lower()
        if isinstance(value, str):
            text = value.upper()
            if text == "CURRENT ROW":
                return FrameBound("current_row")
            if text == "UNBOUNDED":
                return FrameBound(f"unbounded_{side_name}")
        if isinstance(value, exp.Expression):
            if isinstance(value, exp.Literal) and not value.is_string:
                return FrameBound(side_name, number_literal(value.this).value)
            if isinstance(value, exp.Interval):
                lit = self._bind_interval(value, Scope())
                assert isinstance(lit, Literal)
                return FrameBound(side_name, lit.value)
            if isinstance(value, exp.Var) and value.name.upper() == "UNBOUNDED":
                return FrameBound(f"unbounded_{side_name}")
        raise self.error(f"unsupported window frame bound '{value}'", node)


def sort_key(expr: Expr, item: exp.Ordered) -> SortKey:
    """NULLs sort last in both directions unless NULLS FIRST is written (DuckDB's default;
    the dialect makes the parser record exactly that)."""
    return SortKey(expr, not item.args.get("desc"), bool(item.args.get("nulls_first")))


def _walk(e: Expr):  # type: ignore[no-untyped-def]
    yield e
    for c in e.children():
        yield from _walk(c)


def column_name_of(expr: Expr) -> str | None:
    return expr.name if isinstance(expr, ColumnRef) else None
