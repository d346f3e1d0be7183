"""Run the logical rewrite rules, checking the plan after every one.

After each rule the plan must still validate (every reference resolves) and the output
schema must keep its column ids and types: a rule that breaks either is a bug, reported as
PlanError naming the rule rather than surfacing later as a wrong result.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.errors import PlanError
from flowsql.optimizer.context import OptimizerContext
from flowsql.optimizer.rules import RULES, Rule
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.logical import LogicalPlan, validate
from flowsql.planner.nesting import deep_nesting, too_deep_message
from flowsql.planner.schema import Schema

DISABLE_SETTING = "optimizer.disable-rules"


@dataclass(frozen=True)
class OptimizedPlan:
    """The optimized logical plan and, in order, the rules that changed it."""

    plan: LogicalPlan
    changed_by: tuple[str, ...]
    context: OptimizerContext


def optimize(plan: LogicalPlan, settings: dict[str, str] | None = None,
             rules: tuple[Rule, ...] = RULES) -> OptimizedPlan:
    """Apply ``rules`` (default: all of ``RULES``) except those the settings disable."""
    settings = settings or {}
    context = OptimizerContext(settings=settings)
    disabled = _disabled(settings, rules)
    changed: list[str] = []
    for rule in rules:
        name = rule.__name__
        if name in disabled:
            continue
        too_deep = PlanError(f"{name}: {too_deep_message('optimize')}")
        with deep_nesting(lambda: too_deep):  # noqa: B023 (used before the next iteration)
            result = rule(plan, context)
        if result is plan:
            continue
        check_rule_result(name, plan.schema, result)
        changed.append(name)
        plan = result
    return OptimizedPlan(plan, tuple(changed), context)


def _disabled(settings: dict[str, str], rules: tuple[Rule, ...]) -> set[str]:
    names = {r.__name__ for r in rules}
    wanted = set(SettingValues(settings).names(DISABLE_SETTING))
    unknown = wanted - names
    if unknown:
        raise PlanError(f"{DISABLE_SETTING}: unknown rule(s) {', '.join(sorted(unknown))}; "
                        f"rules are {', '.join(r.__name__ for r in rules)}")
    return wanted


def check_rule_result(name: str, before: Schema, plan: LogicalPlan) -> None:
    """Raise PlanError naming ``name`` unless ``plan`` validates with schema ``before``."""
    try:
        validate(plan)
    except PlanError as e:
        raise PlanError(f"rule {name} produced an invalid plan: {e}") from None
    after = plan.schema
    same = len(before) == len(after) and all(
        a.cid == b.cid and a.dtype.equals(b.dtype) for a, b in zip(before, after))
    if not same:
        raise PlanError(f"rule {name} changed the output schema from "
                        f"{_show(before)} to {_show(after)}")


def _show(schema: Schema) -> str:
    return "(" + ", ".join(f"{f.name}#{f.cid}: {f.dtype}" for f in schema) + ")"
