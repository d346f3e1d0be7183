"""flowsql in streaming mode against Apache Flink's stored results, without Flink.

Every corpus query (``queries/*.sql``, see ``flink_corpus``) with a fixture runs on flowsql
at parallelism 1 and 2 over the event files in ``data/``; its final result (changelog
applied, values normalized) must equal Flink's, as a multiset. A query listed in
``known_differences.txt`` must still differ (or fail): when it matches, the test fails
so that the line gets removed. The fixtures are written by
``benchmarks/flink_diff.py --write-fixtures``; queries whose Flink result changed between
repeated runs (``nondeterministic.txt``) have none, and at parallelism 2 the queries whose
lateness depends on timing (``flink_corpus.depends_on_timing``) are not checked.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flink import flink_corpus as corpus

ROOT = Path(__file__).resolve().parents[2]
QUERIES = dict(corpus.load_corpus())
KNOWN = corpus.read_listing(corpus.KNOWN_DIFFERENCES)
UNSTABLE = corpus.read_listing(corpus.NONDETERMINISTIC)
CASES = [(qid, p) for qid, sql in QUERIES.items() for p in corpus.PARALLELISMS
         if corpus.expected(qid, p) is not None and f"{qid}_p{p}" not in UNSTABLE
         and not corpus.depends_on_timing(sql, p)]


class Runners:
    """One flowsql session per parallelism, opened on first use and shared by the
    module's tests (so queries batch into few sessions and worker pools)."""

    def __init__(self) -> None:
        self._open: dict[int, corpus.FlowsqlRunner] = {}

    def __getitem__(self, parallelism: int) -> corpus.FlowsqlRunner:
        if parallelism not in self._open:
            self._open[parallelism] = corpus.FlowsqlRunner(parallelism)
        return self._open[parallelism]

    def close(self) -> None:
        for runner in self._open.values():
            runner.close()


@pytest.fixture(scope="module")
def runners() -> Iterator[Runners]:
    opened = Runners()
    yield opened
    opened.close()


@pytest.mark.parametrize(("qid", "parallelism"), CASES, ids=[f"{q}_p{p}" for q, p in CASES])
def test_query_matches_flink(runners: Runners, qid: str, parallelism: int) -> None:
    key = f"{qid}_p{parallelism}"
    fixture = corpus.expected(qid, parallelism)
    assert fixture is not None
    _, flink = corpus.read_fixture(fixture)
    try:
        _, ours = runners[parallelism].run(QUERIES[qid])
    except Exception as e:  # noqa: BLE001 - an error is a difference like any other
        if key in KNOWN:
            return
        pytest.fail(f"{key} fails on flowsql but Flink runs it: {type(e).__name__}: {e}")
    if key in KNOWN:
        assert ours != flink, (f"{key} now matches Flink: remove it from "
                               f"{corpus.KNOWN_DIFFERENCES.name} ({KNOWN[key]})")
    else:
        assert ours == flink, f"{key} differs from Flink:\n" + corpus.describe_difference(
            flink, ours)


def test_corpus_is_large_and_mostly_covered() -> None:
    assert len(QUERIES) >= 300
    assert len(CASES) >= len(QUERIES)


def test_known_differences_name_checked_queries() -> None:
    """Every listed key is a corpus query at a parallelism that has a fixture, with a
    reason; a stale line would hide nothing and say something untrue."""
    checked = {f"{qid}_p{p}" for qid, p in CASES}
    assert sorted(set(KNOWN) - checked) == []
    assert all(KNOWN.values())


def test_every_fixture_belongs_to_a_query() -> None:
    names = {path.name.rsplit("_p", 1)[0] for path in corpus.EXPECTED.glob("*.csv.gz")}
    assert sorted(names - set(QUERIES)) == []


def test_data_and_generated_queries_are_reproducible(tmp_path: Path) -> None:
    """The committed event files and generated queries are what their seeded
    generators write, so the fixtures can always be recomputed from code."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from flink_diff_corpus import GENERATED, render
        from flink_diff_corpus import corpus as generated
        from flink_diff_data import generate
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    for path in generate(tmp_path):
        assert path.read_bytes() == (corpus.DATA / path.name).read_bytes(), path.name
    assert render(generated()) == GENERATED.read_text("utf-8")
