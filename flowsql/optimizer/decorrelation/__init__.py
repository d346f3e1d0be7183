"""Subquery decorrelation: turning subquery expressions into joins.

``pull_up`` lifts the correlated predicates of a subquery plan to its top, leaving a plan
that no longer depends on the outer row; ``rewrite`` then joins that plan to the outer input
with the lifted predicates as join condition (semi, anti, mark, single or left join,
depending on where the subquery sits). Where lifting cannot be exact, ``domain_join``
evaluates the subquery once per distinct outer value instead and ``rewrite`` joins that
back on the outer values (NULL-safely, see ``null_safe``). Where both apply, ``choice``
keeps the cheaper by the cost model. The rule ``decorrelate_subqueries`` drives them.
"""
