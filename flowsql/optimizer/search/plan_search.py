"""The physical search of a batch plan: the cheapest plan on one subtask, and with
``parallelism.default`` > 1 the cheapest parallel plan, compared by cost.

The parallel plan pays, besides its operators, the start of a job on worker processes
(``parallel_job``) and of each of its stages (``stage``, the root's here, the others with
the exchange that cuts them); a query whose work is small therefore
runs on one subtask in the session's process (a plan without exchanges; see
``runs_on_workers``) instead of paying exchanges. A plan that writes to a sink (INSERT
INTO) keeps its parallel plan: every subtask writes its own files; so does every plan when
``optimizer.small-query-on-one-subtask`` is false.

On the Spark engine the search runs with Spark's constants and one subtask: Spark
distributes the plan itself, so only the algorithms (the build side) are chosen here.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowsql.optimizer.cost import Cost, load_constants
from flowsql.optimizer.search.alternatives import alternatives
from flowsql.optimizer.search.costing import Costing
from flowsql.optimizer.search.memo import Memo
from flowsql.optimizer.search.requirements import SINGLE_INPUT
from flowsql.optimizer.search.winner import Considered
from flowsql.planner.config.settings import SettingValues
from flowsql.planner.physical import ExchangeExec, PhysicalPlan
from flowsql.planner.physical_streaming import SinkExec
from flowsql.planner.properties import Distribution

#: EXPLAIN's label of the alternative that runs the whole query on one subtask
ONE_SUBTASK = "whole query on one subtask"


@dataclass(frozen=True)
class SearchedMemo:
    """One memo the search filled, for EXPLAIN MEMO: ``title`` says where its plans run,
    ``chosen`` whether the chosen plan came from it. Its groups are the nodes of the
    plan the search started from (``SearchResult.planned``)."""

    title: str
    memo: Memo
    chosen: bool


@dataclass(frozen=True)
class SearchResult:
    """The chosen plan and its cost; ``considered``: the alternatives costed at the root
    (both parallelism choices first), for EXPLAIN VERBOSE and MEMO; ``notes``: per node of
    the chosen plan (by id) its own cost and what it delivers, for EXPLAIN VERBOSE;
    ``planned``: the plan whose nodes are the memos' groups, and ``memos`` the memos
    filled (one subtask first), for EXPLAIN MEMO."""

    plan: PhysicalPlan
    cost: Cost
    considered: tuple[Considered, ...]
    notes: dict[int, tuple[PhysicalPlan, Cost, Distribution]]
    planned: PhysicalPlan | None = None
    memos: tuple[SearchedMemo, ...] = ()


def runs_on_workers(plan: PhysicalPlan) -> bool:
    """Whether a batch plan runs on worker processes: it has an exchange. A plan without
    one is the search's choice to run the query on one subtask, in the session."""
    return isinstance(plan, ExchangeExec) or any(runs_on_workers(c) for c in plan.inputs)


def search_physical_plan(plan: PhysicalPlan, settings: dict[str, str]) -> SearchResult:
    """The cheapest physical plan for ``plan``'s groups (see the module docstring)."""
    values = SettingValues(settings)
    engine = "spark" if settings.get("engine") == "spark" else "local"
    constants = load_constants(engine)
    budget = float(values.memory_size("execution.memory-budget"))
    workers = 1 if engine == "spark" else values.integer("parallelism.default")
    serial_memo = Memo(Costing(constants, 1, budget, sort_based=engine != "spark"),
                       alternatives)
    serial = serial_memo.need(plan, SINGLE_INPUT)
    serial_notes = serial_memo.costing.notes
    if workers <= 1:
        considered = serial_memo.considered[(id(plan), SINGLE_INPUT)]
        return SearchResult(serial.plan, serial.cost, considered, serial_notes, plan,
                            (SearchedMemo(ONE_SUBTASK, serial_memo, True),))
    limit = 10.0 * values.integer("optimizer.broadcast-threshold-rows")
    memo = Memo(Costing(constants, workers, budget, limit), alternatives)
    parallel = memo.need(plan, SINGLE_INPUT)
    # the job's start and its root stage; every exchange paid for the stage it adds
    start = Cost(cpu=constants.parallel_job + constants.stage)
    parallel_cost = parallel.cost + start
    one_subtask = (values.boolean("optimizer.small-query-on-one-subtask")
                   and not isinstance(plan, SinkExec)
                   and serial.cost.total <= parallel_cost.total)
    considered = (Considered(ONE_SUBTASK, serial.cost.total, one_subtask),
                  *(Considered(c.label, c.cost + start.total, c.won and not one_subtask)
                    for c in memo.considered[(id(plan), SINGLE_INPUT)]))
    memos = (SearchedMemo(ONE_SUBTASK, serial_memo, one_subtask),
             SearchedMemo(f"on {workers} subtasks (job start {start.total * 1000:.3g}ms "
                          "not included)", memo, not one_subtask))
    if one_subtask:
        return SearchResult(serial.plan, serial.cost, considered, serial_notes, plan, memos)
    return SearchResult(parallel.plan, parallel_cost, considered, memo.costing.notes, plan,
                        memos)
