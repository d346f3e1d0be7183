"""Binding Flink's window table functions in FROM: ``TABLE(TUMBLE(TABLE t, DESCRIPTOR(ts),
size [, offset]))``, ``HOP(..., slide, size [, offset])``, ``CUMULATE(..., step, max_size
[, offset])`` and ``SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), gap)``.

Every argument is checked here, where the AST still knows positions, so a bad call is
reported with line:col at the offending argument: window parameters must be positive
day-time interval literals (a HOP slide / CUMULATE step must divide the size, as Flink
requires), the descriptor must name one TIMESTAMP column of the input.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa
from sqlglot import exp

from flowsql.errors import BindError
from flowsql.planner import types as T
from flowsql.planner.expressions import Expr
from flowsql.planner.logical import LogicalPlan, Scan, WindowShape, WindowTableFunction
from flowsql.planner.schema import Field
from flowsql.sql.dialect import WindowTVF
from flowsql.sql.literals import interval_value
from flowsql.sql.scope import Relation, Scope

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
_WINDOW_TYPE = pa.timestamp("ms")

# kind -> (names of the interval arguments, how many of them are required)
_PARAMETERS: dict[str, tuple[tuple[str, ...], int]] = {
    "tumble": (("size", "offset"), 1),
    "hop": (("slide", "size", "offset"), 2),
    "cumulate": (("step", "size", "offset"), 2),
    "session": (("gap",), 1),
}

Error = Callable[[str, exp.Expression | None], BindError]
BindTable = Callable[[exp.Expression, Scope], tuple[LogicalPlan, list[Relation]]]


def window_tvf_call(node: exp.Table) -> WindowTVF | None:
    """The window TVF of a FROM item ``TABLE(<window tvf>)``, if that is what it is."""
    call = node.this
    if isinstance(call, exp.Anonymous) and call.name.upper() == "TABLE" \
            and len(call.expressions) == 1 and isinstance(call.expressions[0], WindowTVF):
        return call.expressions[0]
    return None


def bind_window_tvf(tvf: WindowTVF, scope: Scope, bind_table: BindTable,
                    error: Error) -> tuple[LogicalPlan, list[str]]:
    """The WindowTableFunction node of ``tvf`` and its default column names."""
    kind = str(tvf.this).lower()
    table = tvf.args["table"]
    plan, relations = bind_table(table, Scope(parent=scope.parent, ctes=scope.ctes))
    columns = [c for rel in relations for c in rel.columns]
    names = [c.name for c in columns]
    clash = next((n for n in names if n.lower() in WINDOW_COLUMNS), None)
    if clash is not None:
        raise error(f"{kind.upper()}: the input already has a column named '{clash}'", table)
    time_field = _descriptor(tvf, columns, error)
    partition = _partition_by(tvf, kind, columns, error)
    shape = _shape(tvf, kind, error)
    delay = None
    watermark = plan.table.watermark if isinstance(plan, Scan) else None
    if watermark is not None and watermark.column.lower() == time_field.name.lower():
        delay = watermark.delay_ms
    window_fields = tuple(Field.fresh(n, _WINDOW_TYPE, nullable=False) for n in WINDOW_COLUMNS)
    node = WindowTableFunction(plan, shape, time_field.ref(), partition, window_fields, delay)
    return node, [*names, *WINDOW_COLUMNS]


def _descriptor(tvf: WindowTVF, columns: list[Field], error: Error) -> Field:
    kind = str(tvf.this).upper()
    descriptor = tvf.args.get("descriptor")
    if descriptor is None:
        raise error(f"{kind} needs DESCRIPTOR(<time column>) as its second argument", tvf)
    args = descriptor.expressions
    if len(args) != 1 or not isinstance(args[0], exp.Column):
        raise error(f"{kind}: DESCRIPTOR takes exactly one column name", descriptor)
    field = _column(args[0], columns, kind, error)
    if not pa.types.is_timestamp(field.dtype):
        raise error(f"{kind}: the time column '{field.name}' has type "
                    f"{T.sql_name(field.dtype)}; it must be a TIMESTAMP", args[0])
    return field


def _column(node: exp.Column, columns: list[Field], kind: str, error: Error) -> Field:
    match = [c for c in columns if c.name.lower() == node.name.lower()]
    if not match:
        raise error(f"{kind}: column '{node.name}' is not a column of the input table", node)
    return match[0]


def _partition_by(tvf: WindowTVF, kind: str, columns: list[Field],
                  error: Error) -> tuple[Expr, ...]:
    keys = tvf.args.get("partition_by") or []
    if keys and kind != "session":
        raise error(f"{kind.upper()} does not take PARTITION BY (only SESSION does)", keys[0])
    return tuple(_column(k, columns, kind.upper(), error).ref() for k in keys)


def _shape(tvf: WindowTVF, kind: str, error: Error) -> WindowShape:
    names, required = _PARAMETERS[kind]
    args = tvf.expressions
    if not required <= len(args) <= len(names):
        wanted = ", ".join(names[:required]) + (
            f" [, {', '.join(names[required:])}]" if len(names) > required else "")
        raise error(f"{kind.upper()} expects TABLE, DESCRIPTOR and then {wanted}; got "
                    f"{len(args)} interval argument(s)", tvf)
    values = {name: _milliseconds(arg, kind, name, error) for name, arg in zip(names, args)}
    for name, arg in zip(names, args):
        if name != "offset" and values[name] <= 0:
            raise error(f"{kind.upper()}: the {name} must be positive", _anchor(arg))
    unit = {"hop": "slide", "cumulate": "step"}.get(kind)
    if unit is not None and values["size"] % values[unit]:
        raise error(f"{kind.upper()}: the {unit} ({values[unit]} ms) must divide the window "
                    f"size ({values['size']} ms)", _anchor(args[0]))
    return WindowShape(kind, **values)


def _anchor(node: exp.Expression) -> exp.Expression:
    """Where to point an error about ``node``: positions are recorded on identifiers, and an
    interval argument has none, so its first literal's position stands in for it."""
    if any(True for _ in node.find_all(exp.Identifier)):
        return node
    literal = next((n for n in node.find_all(exp.Literal) if "line" in n.meta), None)
    if literal is None:
        return node
    anchor = exp.Identifier(this=literal.name)
    anchor.meta.update(literal.meta)
    return anchor


def _milliseconds(node: exp.Expression, kind: str, name: str, error: Error) -> int:
    """An interval literal as whole milliseconds."""
    at = _anchor(node)
    if not isinstance(node, exp.Interval) or not isinstance(node.this, exp.Literal):
        raise error(f"{kind.upper()}: the {name} must be an interval literal such as "
                    "INTERVAL '10' SECOND", at)
    unit = node.args.get("unit")
    try:
        months, days, nanos = interval_value(str(node.this.this),
                                             unit.name if unit is not None else None)
    except (ValueError, ArithmeticError) as e:
        raise error(f"invalid interval '{node.sql()}': {e}", at) from None
    if months:
        raise error(f"{kind.upper()}: the {name} must be a day-time interval (months and "
                    "years have no fixed length)", at)
    if nanos % 1_000_000:
        raise error(f"{kind.upper()}: the {name} must be a whole number of milliseconds",
                    at)
    return days * 86_400_000 + nanos // 1_000_000
