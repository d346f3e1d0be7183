"""``JOIN t FOR SYSTEM_TIME AS OF l.pt [AS a] ON ..``: Flink's processing-time lookup join,
in the one form flowsql supports -- ``t`` a bounded table (a side input, loaded once) and
``l.pt`` a processing-time attribute of the left input.

Once the form is checked the binder produces a ``Join`` marked ``lookup``: the join keeps
its sides (the right one is the table looked up) and streaming plans it as a lookup join
(``LookupJoinExec``: the table read once, each left row joined with it as it arrives, no
left row kept, insert-only output); batch as a hash join building the table. A bounded
table never changes while the query runs, so the result is the ordinary join's rows.
Anything else -- an event-time temporal join against a versioned table, an unbounded
table, FOR SYSTEM_TIME outside a join -- is rejected here rather than read as a plain
join, which would give other rows.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from flowsql.planner.config.connectors import connector_of
from flowsql.planner.expressions import Call, ColumnRef, Expr
from flowsql.planner.logical import LogicalPlan, Project, Scan

Error = Callable[[str, exp.Expression | None], Exception]


def system_time_of(node: exp.Expression) -> exp.Expression | None:
    """The ``FOR SYSTEM_TIME AS OF`` clause of a FROM item, if it has one."""
    version = node.args.get("version") if isinstance(node, exp.Table) else None
    return version if isinstance(version, exp.Version) else None


def without_system_time(node: exp.Table) -> exp.Table:
    copy = node.copy()
    copy.set("version", None)
    return copy


def check_lookup_join(version: exp.Expression, as_of: Expr, left: LogicalPlan,
                      right: LogicalPlan, kind: str, error: Error) -> None:
    """Raise unless ``left JOIN right FOR SYSTEM_TIME AS OF as_of`` is a processing-time
    lookup into a bounded table (``as_of`` bound against the left input)."""
    at = version.args.get("expression")
    if kind not in ("inner", "left"):
        raise error(f"FOR SYSTEM_TIME AS OF: a lookup join is INNER or LEFT, not "
                    f"{kind.upper()}", at)
    if not isinstance(as_of, ColumnRef) or not _is_proctime(left, as_of.cid):
        raise error("FOR SYSTEM_TIME AS OF: only a processing-time attribute of the left "
                    "input (a PROCTIME() column) is supported; event-time temporal joins "
                    "against versioned tables are not", at)
    scans = [p for p in _plans(right) if isinstance(p, Scan)]
    if len(scans) != 1 or not isinstance(right, Scan | Project):
        raise error("FOR SYSTEM_TIME AS OF: the looked-up side must be a table", at)
    table = scans[0].table
    if not connector_of(table.options).is_bounded(table.options,
                                                  table.statistics.row_count):
        raise error(f"FOR SYSTEM_TIME AS OF: table '{table.name}' is unbounded; only a "
                    "bounded table (a side input loaded once) can be looked up", at)


def _is_proctime(plan: LogicalPlan, cid: int) -> bool:
    """Whether column ``cid`` of ``plan`` is computed as ``PROCTIME()`` below it."""
    return any(isinstance(p, Project) and any(
        f.cid == cid and isinstance(e, Call) and e.name == "proctime" and not e.args
        for e, f in zip(p.exprs, p.fields)) for p in _plans(plan))


def _plans(plan: LogicalPlan) -> list[LogicalPlan]:
    out = [plan]
    for child in plan.inputs:
        out += _plans(child)
    return out
