"""How the sanity check names a node in its errors: its kind and its path from the root."""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.planner.physical import PhysicalPlan

__all__ = ["fail", "located", "node_name"]


def node_name(node: PhysicalPlan) -> str:
    return type(node).__name__.removesuffix("Exec")


def located(node: PhysicalPlan, path: tuple[str, ...]) -> str:
    """``HashJoin (at Project > HashJoin)``: the node and the way to it from the root."""
    return f"{node_name(node)} (at {' > '.join((*path, node_name(node)))})"


def fail(node: PhysicalPlan, path: tuple[str, ...], problem: str) -> PlanError:
    return PlanError(f"sanity check: {located(node, path)} {problem}")
