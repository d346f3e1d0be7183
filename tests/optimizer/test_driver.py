"""The driver checks every rule's result and honours optimizer.disable-rules."""

from __future__ import annotations

import pytest

from flowsql.errors import PlanError
from flowsql.optimizer import optimize
from flowsql.optimizer.rules import RULES
from flowsql.planner.logical import Filter, LogicalPlan, Project, walk_plan
from flowsql.planner.schema import Field

from .planbuilder import col, eq, exists, filter_, gt, lit, scan, select


def test_rules_have_their_module_names():
    for rule in RULES:
        assert rule.__module__ == f"flowsql.optimizer.rules.{rule.__name__}"


def test_changed_rules_are_recorded(t):
    a = scan(t)
    plan = select(filter_(a, gt(col(a, "a"), lit(1))), "s")
    result = optimize(plan)
    assert result.changed_by == ("push_down_filter", "prune_columns")


def test_disabled_rule_does_not_run(t):
    a = scan(t)
    plan = select(filter_(a, gt(col(a, "a"), lit(1))), "s")
    result = optimize(plan, {"optimizer.disable-rules": "push_down_filter, prune_columns"})
    assert result.plan is plan
    assert any(isinstance(n, Filter) for n in walk_plan(result.plan))


def test_unknown_rule_name_is_an_error(t):
    with pytest.raises(PlanError, match="unknown rule"):
        optimize(scan(t), {"optimizer.disable-rules": "no_such_rule"})


def test_rule_changing_the_schema_is_rejected(t):
    def drop_last_column(plan: LogicalPlan, context: object) -> LogicalPlan:
        kept = plan.schema[:-1]
        return Project(plan, tuple(f.ref() for f in kept), kept)

    with pytest.raises(PlanError, match="drop_last_column changed the output schema"):
        optimize(scan(t), rules=(drop_last_column,))


def test_rule_changing_a_type_is_rejected(t):
    def retype(plan: LogicalPlan, context: object) -> LogicalPlan:
        f = plan.schema[0]
        fields = (Field(f.cid, f.name, lit("x").dtype), *plan.schema[1:])
        return Project(plan, tuple(x.ref() for x in plan.schema), fields)

    with pytest.raises(PlanError, match="retype"):
        optimize(scan(t), rules=(retype,))


def test_rule_producing_dangling_reference_is_rejected(t, u):
    other = scan(u)

    def dangle(plan: LogicalPlan, context: object) -> LogicalPlan:
        return Filter(plan, eq(col(other, "x"), lit(1)))

    with pytest.raises(PlanError, match="rule dangle produced an invalid plan"):
        optimize(scan(t), rules=(dangle,))


def test_subquery_left_without_decorrelation_fails_physical_planning(t, u):
    from flowsql.optimizer import to_physical

    a, b = scan(t), scan(u)
    plan = filter_(a, exists(filter_(b, eq(col(b, "x"), col(a, "a")))))
    result = optimize(plan, {"optimizer.disable-rules": "decorrelate_subqueries"})
    with pytest.raises(PlanError, match="not decorrelated"):
        to_physical(result.plan, {})
