"""Operator ids: how a checkpoint names the operators whose state it holds.

An operator's id is its task's prefix (the stage name, ``stage-1/``) followed by its
position in the stage plan in pre-order (the node, then its inputs in order), which is the
order in which a run builds its operators. The same SQL planned the same way gives the same
ids on every run, which is what restoring a checkpoint into a restarted job needs.
"""

from __future__ import annotations

from flowsql.planner.physical import PhysicalPlan


def operator_ids(plan: PhysicalPlan, prefix: str) -> list[str]:
    """The ids of ``plan``'s operators in pre-order."""
    ids: list[str] = []

    def visit(node: PhysicalPlan) -> None:
        ids.append(f"{prefix}{len(ids)}")
        for child in node.inputs:
            visit(child)

    visit(plan)
    return ids
