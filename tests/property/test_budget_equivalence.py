"""A tiny memory budget changes how a query runs, never its answer.

Every case is one random query (``random_queries``, one per seed) over random Parquet tables
(``random_tables``: ints with NULLs and a hot key, skewed strings, decimals, dates; several
MiB per table). It runs three ways -- flowsql with ``execution.memory-budget`` = '1mb', so
every join, aggregate, sort, window and set operation over the larger tables must spill;
flowsql with '16gb'; DuckDB -- and both flowsql results must equal DuckDB's (``three_runs``),
with nothing left under ``io.tmp.dirs``. A failure names the seed, the shape and the SQL, so
one case re-runs alone: ``pytest 'tests/property/test_budget_equivalence.py::...[seed12-...]'``.

Seeds are fixed lists, not hypothesis: each case costs three engine runs over MiB-sized data,
so a fixed list keeps CI time stable and a failing case keeps its name from run to run. The
fast cases run at parallelism 1 and a subset at parallelism 2; the ``slow`` sweep runs many
more seeds over two further data sets (see tests/README.md).
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from tests.property.random_queries import RandomQuery, random_query
from tests.property.result_equivalence import differences
from tests.property.three_runs import ThreeRuns

CI_SEEDS = tuple(range(40))
#: chosen to reach the sort, join, anti join, aggregate, window and set operation families
CI_PARALLEL_SEEDS = (40, 41, 43, 46, 48, 49, 51, 68)
SWEEP_SEEDS = tuple(range(1000, 1300))
SWEEP_PARALLEL_SEEDS = tuple(range(2000, 2060))
#: the shape families every CI list must reach (the label's text before its first '-' or '+')
FAMILIES = {"sort", "join", "semi", "anti", "aggregate", "window", "setop"}


def _case_id(seed: int) -> str:
    return f"seed{seed}-{random_query(seed).shape}"


def _check(runs: ThreeRuns, seed: int) -> None:
    query = random_query(seed)
    problems = runs.problems(query)
    assert not problems, "\n".join([f"seed {seed} ({query.shape}): {query.sql}", *problems])


@pytest.mark.parametrize("seed", CI_SEEDS, ids=_case_id)
def test_tiny_budget_gives_the_unlimited_and_duckdb_answer(three_runs: ThreeRuns,
                                                           seed: int) -> None:
    _check(three_runs, seed)


@pytest.mark.parametrize("seed", CI_PARALLEL_SEEDS, ids=_case_id)
def test_tiny_budget_gives_the_same_answer_at_parallelism_2(three_runs_parallel: ThreeRuns,
                                                            seed: int) -> None:
    _check(three_runs_parallel, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SWEEP_SEEDS, ids=_case_id)
def test_sweep_tiny_budget_gives_the_same_answer(sweep_runs: ThreeRuns, seed: int) -> None:
    _check(sweep_runs, seed)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SWEEP_PARALLEL_SEEDS, ids=_case_id)
def test_sweep_tiny_budget_gives_the_same_answer_at_parallelism_2(
        three_runs_parallel: ThreeRuns, seed: int) -> None:
    _check(three_runs_parallel, seed)


# --- the harness itself -----------------------------------------------------------------------

def _family(query: RandomQuery) -> str:
    return query.shape.replace("+", "-").split("-", 1)[0]


def test_ci_seeds_reach_every_shape_family() -> None:
    assert {_family(random_query(seed)) for seed in CI_SEEDS} == FAMILIES
    assert any(random_query(s).shape.endswith("+orderby-limit") for s in CI_SEEDS)
    assert any(random_query(s).shape.endswith("+orderby") for s in CI_SEEDS)
    parallel = {_family(random_query(seed)) for seed in CI_PARALLEL_SEEDS}
    assert parallel == FAMILIES - {"semi"}


def test_queries_are_the_same_for_a_seed() -> None:
    assert [random_query(s) for s in CI_SEEDS] == [random_query(s) for s in CI_SEEDS]
    assert len({random_query(s).sql for s in CI_SEEDS}) == len(CI_SEEDS)


def test_comparison_catches_a_missing_row_a_changed_value_and_a_wrong_order() -> None:
    expected = pa.table({"k": [1, 2, 2, None], "s": ["a", "b", "c", "d"]})
    unordered = RandomQuery(0, "test", "")
    ordered = RandomQuery(0, "test", "", order_positions=(0,))
    assert differences(unordered, expected.take([3, 2, 1, 0]), expected) == []
    assert differences(unordered, expected.slice(0, 3), expected) != []
    assert differences(unordered, expected.set_column(1, "s", pa.array(["a", "b", "c", "e"])),
                       expected) != []
    # ties on the key may swap; a different key order may not
    assert differences(ordered, expected.take([0, 2, 1, 3]), expected) == []
    assert differences(ordered, expected.take([1, 0, 2, 3]), expected) != []


def test_comparison_leaves_out_only_the_tie_group_a_limit_cut() -> None:
    expected = pa.table({"k": [1, 2, 2], "s": ["a", "b", "c"]})
    limited = RandomQuery(0, "test", "", order_positions=(0,), cut_tail=True)
    other_tie = pa.table({"k": [1, 2, 2], "s": ["a", "b", "x"]})
    assert differences(limited, other_tie, expected) == []
    changed_before_cut = pa.table({"k": [1, 2, 2], "s": ["z", "b", "c"]})
    assert differences(limited, changed_before_cut, expected) != []
    offset = RandomQuery(0, "test", "", order_positions=(0,), cut_head=True)
    assert differences(offset, pa.table({"k": [1, 2, 2], "s": ["q", "b", "c"]}), expected) == []
