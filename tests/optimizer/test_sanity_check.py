"""The sanity check accepts the plans the physical passes make and rejects a plan that
breaks one of their promises -- distribution, boundedness, changelog mode -- naming the
node. Each broken plan is a real plan with one enforcer removed or one operator added."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import flowsql
from flowsql.errors import PlanError
from flowsql.optimizer.sanity_check import sanity_check
from flowsql.planner.physical import (
    ExchangeExec,
    HashJoinExec,
    LimitExec,
    PhysicalPlan,
    SortExec,
)
from flowsql.planner.physical_streaming import GroupAggregateExec
from flowsql.session import Session
from flowsql.session.execute.planning import plan_query
from flowsql.sql.statement_parser import parse_one


@pytest.fixture()
def session() -> Iterator[Session]:
    s = flowsql.connect()
    # the parallel plans under test are planned for the workers, however small the tables
    s.set("optimizer.small-query-on-one-subtask", "false")
    for name in ("a", "b"):
        s.sql(f"CREATE TABLE {name} (k INT, v INT) "
              "WITH ('connector' = 'datagen', 'number-of-rows' = '1000')")
    s.sql("CREATE TABLE endless (k INT, v INT) WITH ('connector' = 'datagen')")
    yield s
    s.close()


def physical(session: Session, query: str) -> PhysicalPlan:
    _, _, plan = plan_query(session, parse_one(query))  # type: ignore[arg-type]
    return plan  # type: ignore[no-any-return]


def find(root: PhysicalPlan, kind: type) -> PhysicalPlan:
    if isinstance(root, kind):
        return root
    for child in root.inputs:
        try:
            return find(child, kind)
        except LookupError:
            continue
    raise LookupError(kind.__name__)


def without_exchange_below(root: PhysicalPlan, target: PhysicalPlan, index: int
                           ) -> PhysicalPlan:
    """``root`` with the exchange that is ``target``'s input ``index`` removed."""
    if root is target:
        inputs = list(root.inputs)
        assert isinstance(inputs[index], ExchangeExec)
        inputs[index] = inputs[index].inputs[0]
        return root.with_inputs(tuple(inputs))
    return root.with_inputs(tuple(without_exchange_below(c, target, index)
                                  for c in root.inputs))


@pytest.mark.parametrize("query", [
    "SELECT a.k, sum(b.v) FROM a JOIN b ON a.k = b.k GROUP BY a.k",
    "SELECT k, count(DISTINCT v) FROM a GROUP BY k",
    "SELECT * FROM a WHERE k IN (SELECT k FROM b) ORDER BY v LIMIT 3",
    "SELECT k FROM a INTERSECT SELECT k FROM b",
    "SELECT k, row_number() OVER (PARTITION BY k ORDER BY v) FROM a",
])
@pytest.mark.parametrize("threshold", ["0", "100000"])
def test_plans_of_the_passes_pass(session: Session, query: str, threshold: str) -> None:
    session.set("parallelism.default", "2")
    session.set("optimizer.broadcast-threshold-rows", threshold)
    sanity_check(physical(session, query), session.settings, streaming=False)


def test_a_parallel_root_must_be_gathered(session: Session) -> None:
    session.set("parallelism.default", "2")
    plan = physical(session, "SELECT k, count(*) FROM a GROUP BY k")
    assert isinstance(plan, ExchangeExec) and plan.kind == "gather"
    with pytest.raises(PlanError, match=r"sanity check: (\w+) \(at \1\) is the root .* "
                                        r"final gather is missing"):
        sanity_check(plan.input, session.settings, streaming=False)


def test_a_hash_join_needs_both_inputs_hashed(session: Session) -> None:
    session.set("parallelism.default", "2")
    session.set("optimizer.broadcast-threshold-rows", "0")
    # large enough that partitioning both sides beats gathering them (only planned here)
    for name in ("big_a", "big_b"):
        session.sql(f"CREATE TABLE {name} (k INT, v INT) "
                    "WITH ('connector' = 'datagen', 'number-of-rows' = '10000000')")
    plan = physical(session, "SELECT big_a.v, big_b.v FROM big_a JOIN big_b "
                             "ON big_a.k = big_b.k")
    join = find(plan, HashJoinExec)
    sanity_check(plan, session.settings, streaming=False)
    broken = without_exchange_below(plan, join, 1)
    with pytest.raises(PlanError, match=r"HashJoin \(at Exchange > .*HashJoin\) needs both "
                                        r"inputs hashed on corresponding keys"):
        sanity_check(broken, session.settings, streaming=False)


def test_a_final_aggregate_needs_its_groups_together(session: Session) -> None:
    session.set("parallelism.default", "2")
    plan = physical(session, "SELECT k, count(DISTINCT v) FROM a GROUP BY k")
    aggregate = find(plan, ExchangeExec).inputs[0]
    while not isinstance(aggregate.inputs[0], ExchangeExec):
        aggregate = aggregate.inputs[0]
    broken = without_exchange_below(plan, aggregate, 0)
    with pytest.raises(PlanError, match=r"HashAggregate .* needs the rows of each group on "
                                        r"one subtask"):
        sanity_check(broken, session.settings, streaming=False)


def test_a_keyed_streaming_operator_needs_its_keys_hashed(session: Session) -> None:
    session.set("execution.runtime-mode", "streaming")
    session.set("parallelism.default", "2")
    plan = physical(session, "SELECT k, count(*) FROM a GROUP BY k")
    aggregate = find(plan, GroupAggregateExec)
    sanity_check(plan, session.settings, streaming=True)
    with pytest.raises(PlanError, match=r"GroupAggregate \(at Exchange > .*GroupAggregate\) "
                                        r"keeps state per key"):
        sanity_check(without_exchange_below(plan, aggregate, 0), session.settings,
                     streaming=True)


def test_no_blocking_operator_over_an_endless_input(session: Session) -> None:
    """A batch sort planned over a table that never ends: checked as a streaming plan."""
    plan = physical(session, "SELECT k FROM endless ORDER BY k")
    sort = find(plan, SortExec)
    sanity_check(physical(session, "SELECT k FROM a ORDER BY k"), session.settings,
                 streaming=True)
    with pytest.raises(PlanError, match=r"sanity check: Sort \(at Sort\) emits only at the "
                                        r"end of its input, but its input \(table 'endless'\) "
                                        r"never ends"):
        sanity_check(sort, session.settings, streaming=True)


def test_no_updating_input_into_an_insert_only_operator(session: Session) -> None:
    session.set("execution.runtime-mode", "streaming")
    plan = physical(session, "SELECT k, count(*) AS c FROM a GROUP BY k")
    limited = LimitExec(plan, 5, 0, plan.est_rows)
    with pytest.raises(PlanError, match=r"Limit \(at Limit\) accepts insert-only input, but "
                                        r"its input is updating \(because of GroupAggregate\)"):
        sanity_check(limited, session.settings, streaming=True)
    inserts = physical(session, "SELECT k FROM a")
    sanity_check(LimitExec(inserts, 5, 0, plan.est_rows), session.settings, streaming=True)
