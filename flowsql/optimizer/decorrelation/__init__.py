"""Subquery decorrelation: turning subquery expressions into joins.

``pull_up`` lifts the correlated predicates of a subquery plan to its top, leaving a plan
that no longer depends on the outer row; ``rewrite`` then joins that plan to the outer input
with the lifted predicates as join condition (semi, anti, mark, single or left join,
depending on where the subquery sits). The rule ``decorrelate_subqueries`` drives both.
"""
