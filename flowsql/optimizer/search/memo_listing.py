"""What EXPLAIN MEMO shows of the search: every memo it filled (the one-subtask memo and,
at a parallelism above 1, the parallel one), group by group.

A group is a node of the plan the search started from, numbered in pre-order (``G1`` is
the root), with its EXPLAIN line, estimated rows and input groups. Under it, each
requirement the group was asked for (distribution and order, columns by name) lists
the alternatives costed for it, cheapest first: label, what enforcers were put over it
and its total cost (its inputs included); ``*`` marks the one kept. A requirement whose
kept plan is part of the chosen plan says so (``in the chosen plan``); one no alternative
could meet says ``no plan``.
"""

from __future__ import annotations

from flowsql.optimizer.search.plan_search import SearchedMemo, SearchResult
from flowsql.optimizer.search.requirements import Required
from flowsql.optimizer.search.winner import Considered
from flowsql.planner.explain import describe_physical
from flowsql.planner.expressions import render
from flowsql.planner.physical import PhysicalPlan


def memo_listing(result: SearchResult) -> list[str]:
    """The memos of ``result`` as EXPLAIN MEMO prints them (see the module docstring)."""
    if result.planned is None:
        return []
    groups = _groups(result.planned)
    numbers = {id(node): n for n, node in enumerate(groups, 1)}
    names = _column_names(result.planned)
    in_plan = {id(node) for node in _groups(result.plan)}
    lines: list[str] = []
    for searched in result.memos:
        chosen = " (chosen)" if searched.chosen else ""
        lines += ["", f"== Memo: {searched.title}{chosen} =="]
        for node in groups:
            lines += _group_lines(searched, node, numbers, names, in_plan)
    return lines[1:]


def _group_lines(searched: SearchedMemo, node: PhysicalPlan, numbers: dict[int, int],
                 names: dict[int, str], in_plan: set[int]) -> list[str]:
    memo = searched.memo
    asked = [(required, considered) for (group, required), considered in memo.considered.items()
             if group == id(node)]
    if not asked:
        return []
    inputs = ", ".join(f"G{numbers[id(child)]}" for child in node.inputs)
    head = f"G{numbers[id(node)]} {describe_physical(node)} rows=~{round(node.est_rows)}"
    lines = [head + (f" inputs=[{inputs}]" if inputs else "")]
    used = _used_requirement(searched, node, in_plan) if searched.chosen else None
    for required, considered in asked:
        lines.append(f"  required {describe_required(required, names)}:"
                     + (" in the chosen plan" if required == used else ""))
        if not considered:
            lines.append("    no plan")
        lines += [f"    {_alternative(c)}" for c in sorted(considered, key=lambda c: c.cost)]
    return lines


def _used_requirement(searched: SearchedMemo, node: PhysicalPlan, in_plan: set[int]
                      ) -> Required | None:
    """The requirement of ``node``'s group whose kept plan the chosen plan contains. The
    plans kept under other requirements may be parts of it (the scan under the gather
    that serves ``single``): the largest is the one the consumer above asked for."""
    kept = [(len(_groups(w.plan)), required)
            for (group, required), w in searched.memo.best_plans.items()
            if group == id(node) and w is not None and id(w.plan) in in_plan]
    return max(kept, key=lambda k: k[0])[1] if kept else None


def _alternative(considered: Considered) -> str:
    mark = "*" if considered.won else " "
    label = considered.label or "as planned"
    enforcers = "".join(f" + {e}" for e in considered.enforcers)
    return f"{mark} {label}{enforcers}: cost={considered.cost * 1000:.3g}ms"


def describe_required(required: Required, names: dict[int, str]) -> str:
    """A requirement with columns by name: ``single``, ``hash(a, b)`` (``hash=`` when
    exactly those keys), followed by ``sorted(a ASC NULLS LAST)`` and, when no sort may be
    placed for it, ``delivered``."""
    text = required.kind
    if required.kind == "hash":
        keys = ", ".join(render(k) for k in required.keys)
        text = f"hash{'=' if required.exact else ''}({keys})"
    if required.ordering.keys:
        keys = ", ".join(
            f"{names.get(k.cid, f'#{k.cid}')} {'ASC' if k.ascending else 'DESC'} "
            f"NULLS {'FIRST' if k.nulls_first else 'LAST'}" for k in required.ordering.keys)
        text += f" sorted({keys})" + ("" if required.sort_allowed else " delivered")
    return text


def _groups(plan: PhysicalPlan) -> list[PhysicalPlan]:
    """The nodes of ``plan`` in pre-order, each once."""
    seen: dict[int, PhysicalPlan] = {}
    stack = [plan]
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(reversed(node.inputs))
    return list(seen.values())


def _column_names(plan: PhysicalPlan) -> dict[int, str]:
    names: dict[int, str] = {}
    for node in _groups(plan):
        names.update({f.cid: f.name for f in node.schema})
    return names
