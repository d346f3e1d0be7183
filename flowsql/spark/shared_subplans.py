"""Shared subplans on Spark: one cached DataFrame read by every reference.

``optimizer/share_subplans`` turns identical subtrees into one ``SharedSubplanExec`` and
``ReuseSubplanExec`` leaves. The program computes the shared subtree into one DataFrame
variable and marks it ``.cache()`` (Spark keeps the first computation's partitions and
serves later actions and every branch of the same job from them); each reference reads
that variable, its columns renamed by position to the ids of the copy it replaced. Which
node the program meets first does not matter: the first one compiles the subtree, the
others reuse its variable.
"""

from __future__ import annotations

from flowsql.errors import PlanError
from flowsql.planner.physical import PhysicalPlan, ReuseSubplanExec, SharedSubplanExec
from flowsql.spark.codegen import Program, call


def register_shared_subplans(program: Program, plan: PhysicalPlan) -> None:
    """Tell ``program`` what each shared subplan of ``plan`` computes, before compiling."""
    stack = [plan]
    while stack:
        node = stack.pop()
        if isinstance(node, SharedSubplanExec):
            program.shared_plans[node.share_id] = node.input
        stack.extend(node.inputs)


def _cached(program: Program, share_id: int) -> str:
    """The variable of shared subplan ``share_id``, compiled on first use."""
    known = program.shared_frames.get(share_id)
    if known is not None:
        return known
    plan = program.shared_plans.get(share_id)
    if plan is None:
        raise PlanError(f"shared subplan #{share_id} is not in the plan")
    frame = program.assign(f"{program.compile(plan)}.cache()")
    program.shared_frames[share_id] = frame
    return frame


def compile_shared_subplan(program: Program, node: SharedSubplanExec) -> str:
    return _cached(program, node.share_id)


def compile_reuse_subplan(program: Program, node: ReuseSubplanExec) -> str:
    names = [repr(n) for n in program.names(node.fields)]
    return program.assign(call(f"{_cached(program, node.share_id)}.toDF", names))
