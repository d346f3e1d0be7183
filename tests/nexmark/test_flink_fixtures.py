"""Every Nexmark query's flowsql result against Apache Flink 2.3's, stored as fixtures.

``tests/nexmark/expected/<query>.csv.gz`` holds Flink's final result of each query over
4000 events at 50 events/s (seed 0; the ``CONFIG`` of ``test_queries.py``), at parallelism
1, written by::

    flowsql nexmark run --queries all --events 4000 --rate 50 --verify \\
        --fixtures tests/nexmark/expected

Flink does not run here (a JVM and the apache-flink package): flowsql's result is compared
with the stored one by the verdict ``--verify`` gives (``flowsql.nexmark.verify.verdict``:
equal multisets, on the ranked columns for q9/q18/q19, with the known AVG type difference
for q4/q17).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from flowsql.nexmark.generate import generate_files
from flowsql.nexmark.generator import KINDS, GeneratorConfig
from flowsql.nexmark.queries import QUERIES
from flowsql.nexmark.runner import open_session
from flowsql.nexmark.verify import (
    NOT_COMPARED,
    Outcome,
    applied,
    flowsql_outcome,
    narrowed,
    normal,
    read_fixture,
    verdict,
    write_flink_files,
)

EXPECTED = Path(__file__).resolve().parent / "expected"
CONFIG = GeneratorConfig(events=4000, first_event_rate=50, next_event_rate=50)
#: queries Flink rejects too (no fixture)
REJECTED_BY_BOTH = {"q6"}
FIXTURE_QUERIES = [q for q in QUERIES if q not in NOT_COMPARED and q not in REJECTED_BY_BOTH]
PASSING = ("match", "known difference")


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    opened = open_session(CONFIG, side_input_dir=str(tmp_path_factory.mktemp("side")))
    yield opened
    opened.close()


@pytest.fixture(scope="module")
def session_p2(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    opened = open_session(CONFIG, parallelism=2,
                          side_input_dir=str(tmp_path_factory.mktemp("side2")))
    yield opened
    opened.close()


def test_every_query_flink_runs_has_a_fixture() -> None:
    stored = {path.name.removesuffix(".csv.gz") for path in EXPECTED.glob("*.csv.gz")}
    assert stored == set(FIXTURE_QUERIES)


@pytest.mark.parametrize("query", FIXTURE_QUERIES)
def test_query_matches_flink(query: str, session) -> None:  # type: ignore[no-untyped-def]
    flink = read_fixture(EXPECTED, query)
    assert flink.rows, "an empty fixture compares nothing"
    result = verdict(query, flowsql_outcome(session, query), flink)
    assert result.status in PASSING, result.detail


@pytest.mark.parametrize("query", ["q4", "q5", "q7", "q8", "q11", "q19"])
def test_stateful_query_at_parallelism_2_matches_flink(  # type: ignore[no-untyped-def]
        query: str, session_p2) -> None:
    result = verdict(query, flowsql_outcome(session_p2, query), read_fixture(EXPECTED, query))
    assert result.status in PASSING, result.detail


# --- the comparison's parts ----------------------------------------------------------

def test_the_csv_copies_flink_reads_hold_the_same_events(tmp_path: Path) -> None:
    config = GeneratorConfig(events=600, first_event_rate=50, next_event_rate=50)
    generate_files(config, tmp_path / "parquet")
    write_flink_files(tmp_path / "parquet", tmp_path / "csv")
    session = open_session(config, data_dir=str(tmp_path / "csv"), streaming=False,
                           side_input_dir=str(tmp_path), data_format="csv")
    try:
        for kind in KINDS:
            got = session.sql(f"SELECT * FROM {kind}").to_arrow()
            assert got.to_pylist() == pq.read_table(tmp_path / "parquet" / kind).to_pylist()
    finally:
        session.close()


def test_a_retract_changelog_is_applied() -> None:
    changes = [("+I", ("a", "1")), ("-U", ("a", "1")), ("+U", ("a", "2")),
               ("+I", ("b", "1")), ("-D", ("b", "1")), ("+I", ("c", "1")),
               ("+I", ("c", "1"))]
    assert applied(changes) == Counter({("a", "2"): 1, ("c", "1"): 2})
    with pytest.raises(ValueError, match="never added"):
        applied([("-D", ("a", "1"))])


def test_an_upsert_changelog_replaces_the_row_of_its_key() -> None:
    changes = [("+I", ("a", "1")), ("+U", ("a", "2")), ("+I", ("b", "1")),
               ("+U", ("a", "3")), ("-D", ("b", "1"))]
    assert applied(changes, upsert_key=[0]) == Counter({("a", "3"): 1})


def test_values_are_normalized_alike_from_both_engines() -> None:
    import datetime as dt
    import decimal

    stamp = dt.datetime(2015, 7, 15, 0, 0, 1, 5000)
    assert normal(stamp) == "2015-07-15 00:00:01.005" == normal("2015-07-15 00:00:01.005",
                                                                 "TIMESTAMP(3) NOT NULL")
    assert normal(decimal.Decimal("908.000")) == "908" == normal("908.000", "DECIMAL(23, 3)")
    assert normal(2.5) == "2.5" and normal(None) == "NULL" and normal(7) == "7"


def test_a_known_difference_passes_only_when_truncation_explains_it() -> None:
    flink = Outcome(("category", "avg_final"), Counter({("10", "21"): 1}))
    assert verdict("q4", Outcome(("category", "avg_final"), Counter({("10", "21.75"): 1})),
                   flink).status == "known difference"
    assert verdict("q4", Outcome(("category", "avg_final"), Counter({("10", "22.25"): 1})),
                   flink).status == "differs"
    assert narrowed("q4", flink, truncate="avg_final") == Counter({("10", "21"): 1})


def test_ties_are_compared_on_the_ranked_columns_only() -> None:
    columns = ("auction", "bidder", "price", "channel", "url", "dateTime", "extra",
               "rank_number")
    ours = Outcome(columns, Counter({("1", "7", "5", "c", "u", "t1", "x", "1"): 1}))
    flink = Outcome(columns, Counter({("1", "8", "5", "c", "u", "t2", "y", "1"): 1}))
    assert verdict("q19", ours, flink).status == "match"
    assert verdict("q0", Outcome(columns[:7], Counter({("1",) * 7: 1})),
                   Outcome(columns[:7], Counter({("2",) * 7: 1}))).status == "differs"
