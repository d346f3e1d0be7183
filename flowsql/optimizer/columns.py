"""Column-id bookkeeping over logical plans, shared by the rewrite rules.

Rules never resolve names: they reason about which node produces a column id and which
expressions read it. A column is *produced* by the node whose schema lists it; a reference to
an id that no node of a subplan produces is an outer (correlated) reference of that subplan.
"""

from __future__ import annotations

from flowsql.planner.expressions import ColumnRef, Expr, column_ids
from flowsql.planner.logical import LogicalPlan, Project, walk_plan
from flowsql.planner.schema import Field, Schema


def produced_cids(plan: LogicalPlan) -> set[int]:
    """Ids of every column some node of ``plan`` outputs."""
    out: set[int] = set()
    for node in walk_plan(plan):
        out |= node.column_ids
    return out


def referenced_cids(plan: LogicalPlan) -> set[int]:
    """Ids of every column read by an expression of ``plan`` (outside nested subqueries)."""
    out: set[int] = set()
    for node in walk_plan(plan):
        for e in node.expressions():
            out |= column_ids(e)
    return out


def outer_cids(plan: LogicalPlan) -> set[int]:
    """The correlated references of a subquery plan."""
    return referenced_cids(plan) - produced_cids(plan)


def exprs_cids(exprs: list[Expr] | tuple[Expr, ...]) -> set[int]:
    out: set[int] = set()
    for e in exprs:
        out |= column_ids(e)
    return out


def fields_by_cid(schema: Schema) -> dict[int, Field]:
    return {f.cid: f for f in schema}


def project_onto(plan: LogicalPlan, fields: Schema) -> LogicalPlan:
    """``plan`` restricted and reordered to ``fields`` (ids ``plan`` outputs), passing each
    column through under its own id; ``plan`` itself when it already has exactly them."""
    if tuple(f.cid for f in plan.schema) == tuple(f.cid for f in fields):
        return plan
    available = fields_by_cid(plan.schema)
    kept = tuple(available[f.cid] for f in fields)
    return Project(plan, tuple(f.ref() for f in kept), kept)


def is_passthrough(project: Project) -> bool:
    """True when a Project only reorders or drops its input's columns under their ids."""
    return all(isinstance(e, ColumnRef) and e.cid == f.cid
               for e, f in zip(project.exprs, project.fields))


def expr_key(e: Expr) -> str:
    """A key equal for structurally equal expressions over the same column ids.

    Not ``render``: two columns of the same name (a table joined with itself) render alike.
    """
    return repr(e)
