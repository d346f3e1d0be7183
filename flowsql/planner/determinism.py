"""Whether an expression may be evaluated any number of times with the same result.

A call of a user-defined function whose ``deterministic`` hint is False may return a
different value each time it runs, so rewrites must neither duplicate it (substituting
it into two places evaluates it twice), nor merge two occurrences into one, nor move it to
where it runs on other rows. Every rule asks this one question.
"""

from __future__ import annotations

from flowsql.planner.expressions import AggCall, Expr, UdfCall

__all__ = ["is_deterministic"]


def is_deterministic(expr: Expr) -> bool:
    """False when ``expr`` contains a call of a non-deterministic user function."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, UdfCall | AggCall) and node.function is not None \
                and not node.function.hints.deterministic:
            return False
        stack.extend(node.children())
    return True
