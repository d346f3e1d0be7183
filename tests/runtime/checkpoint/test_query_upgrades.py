"""Query upgrades: a changed query started from a savepoint of the old one. Each change of
the table gets its verdict (restored, migrated, refused), and where the job may start, its
final results are checked against what the restored state implies.

The old query counts rows and keeps the maximum per ``v % 5`` over the sequence 1..ROWS
(``OLD``); it is stopped (a final
checkpoint) while the source is in the middle, at position P: the savepoint then holds
the counts of 1..P, and the restored job reads P+1..ROWS.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pytest

import flowsql
from flowsql.errors import ExecutionError
from flowsql.runtime.checkpoint.storage import CheckpointStorage
from tests.harness.chaos import latest_checkpoint

ROWS = 8000
BELOW = "SELECT v % 5 AS k, v AS w FROM src"
OLD = f"SELECT k, COUNT(*) AS c, MAX(w) AS m FROM ({BELOW}) GROUP BY k"


def _session(checkpoints: Path, **settings: str) -> Any:
    session = flowsql.connect()
    for key, value in {"execution.runtime-mode": "streaming",
                       "execution.checkpointing.interval": "200 ms",
                       "execution.checkpointing.dir": str(checkpoints), **settings}.items():
        session.sql(f"SET '{key}' = '{value}'")
    for name in ("src", "src2"):
        session.sql(f"CREATE TABLE {name} (v BIGINT) WITH ('connector' = 'datagen', "
                    "'rows-per-second' = '4000', 'fields.v.kind' = 'sequence', "
                    f"'fields.v.start' = '1', 'fields.v.end' = '{ROWS}')")
    return session


def _stopped_midway(checkpoints: Path, query: str, after_s: float) -> Path:
    """Run ``query`` for ``after_s`` seconds and at least one checkpoint, stop it (with a
    final checkpoint) and return its latest completed checkpoint."""
    session = _session(checkpoints)
    try:
        changes = session.sql(query).stream()
        started = time.monotonic()
        for _ in changes:
            if time.monotonic() - started > after_s and latest_checkpoint(checkpoints):
                break
        changes.close()  # stops the job with a final checkpoint
    finally:
        session.close()
    checkpoint = latest_checkpoint(checkpoints)
    assert checkpoint is not None
    return checkpoint


@pytest.fixture(scope="module")
def savepoint(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, int]:
    """A completed checkpoint of OLD taken in the middle of the input, and its position."""
    checkpoint = _stopped_midway(tmp_path_factory.mktemp("upgrades") / "checkpoints", OLD, 0.8)
    return str(checkpoint), _source_position(checkpoint)


def _source_position(checkpoint: Path) -> int:
    storage = CheckpointStorage.from_uri(str(checkpoint.parent.parent), checkpoint.parent.name)
    metadata = storage.read_metadata(int(checkpoint.name.removeprefix("chk-")))
    (source,) = [op for op in metadata.operators if op.operator_id.startswith("source-")]
    position = storage.read_tables(metadata, source.operator_id, 0)["list/position"]
    return int(pc.max(position.column("position")).as_py())


def _final(session: Any, query: str) -> dict[Any, tuple[Any, ...]]:
    """The final row per key of ``query``'s changelog (upserted by its first column)."""
    rows: dict[Any, tuple[Any, ...]] = {}
    for batch in session.sql(query).stream():
        for row in zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns))):
            if row[0] in ("+I", "+U"):
                rows[row[1]] = row[1:]
            elif row[0] == "-D":
                rows.pop(row[1], None)
    return rows


def _restored(tmp_path: Path, savepoint: str, query: str, **settings: str
              ) -> dict[Any, tuple[Any, ...]]:
    session = _session(tmp_path / "checkpoints", **{"execution.savepoint.path": savepoint,
                                                     **settings})
    try:
        return _final(session, query)
    finally:
        session.close()


def _count(key: int, first: int = 1, modulus: int = 5) -> int:
    return sum(1 for v in range(first, ROWS + 1) if v % modulus == key)


def _sum(key: int, first: int = 1) -> int:
    return sum(v for v in range(first, ROWS + 1) if v % 5 == key)


def _max(key: int) -> int:
    return max(v for v in range(1, ROWS + 1) if v % 5 == key)


def test_the_savepoint_is_taken_in_the_middle(savepoint: tuple[str, int]) -> None:
    assert 0 < savepoint[1] < ROWS


def test_an_added_projected_column_restores_everything(tmp_path: Path,
                                                       savepoint: tuple[str, int]) -> None:
    rows = _restored(tmp_path, savepoint[0],
                     f"SELECT k, COUNT(*) AS c, MAX(w) AS m, 'x' AS tag FROM ({BELOW}) GROUP BY k")
    assert rows == {k: (k, _count(k), _max(k), "x") for k in range(5)}


def test_a_changed_filter_above_the_aggregate_restores_everything(
        tmp_path: Path, savepoint: tuple[str, int]) -> None:
    rows = _restored(tmp_path, savepoint[0], f"SELECT k, c, m FROM ({OLD}) WHERE k <> 2")
    assert rows == {k: (k, _count(k), _max(k)) for k in (0, 1, 3, 4)}


def test_an_added_aggregate_function_migrates_and_counts_from_the_restore(
        tmp_path: Path, savepoint: tuple[str, int]) -> None:
    path, position = savepoint
    session = _session(tmp_path / "checkpoints", **{"execution.savepoint.path": path})
    try:
        query = f"SELECT k, COUNT(*) AS c, MAX(w) AS m, SUM(w) AS s FROM ({BELOW}) GROUP BY k"
        rows = _final(session, query)
    finally:
        session.close()
    # COUNT and MAX were restored whole; the new SUM covers the rows read after the restore
    assert rows == {k: (k, _count(k), _max(k), _sum(k, position + 1)) for k in range(5)}


def test_the_report_says_what_each_state_becomes(tmp_path: Path,
                                                 savepoint: tuple[str, int]) -> None:
    session = _session(tmp_path / "checkpoints", **{"execution.savepoint.path": savepoint[0]})
    session.sql("CREATE TABLE sink (k BIGINT, c BIGINT, m BIGINT, s BIGINT) "
                "WITH ('connector' = 'blackhole')")
    try:
        result = session.sql(f"INSERT INTO sink SELECT k, COUNT(*), MAX(w), SUM(w) "
                             f"FROM ({BELOW}) GROUP BY k")
        assert result.job.wait(60) == "FINISHED"
    finally:
        session.close()
    report = result.restore_report.to_pylist()
    verdicts = {(r["operator"].rsplit("-", 1)[0], r["state"]): r["verdict"] for r in report}
    # over an insert-only input MAX keeps only the extreme, in ``groups``: no values table
    assert verdicts == {("source", "list/position"): "restored",
                        ("group-aggregate", "keyed/groups"): "migrated",
                        ("sink", "*"): "new"}
    migrated = [r for r in report if r["verdict"] == "migrated"][0]
    assert migrated["rows"] == 5
    assert migrated["detail"] == "+sum(w)_sum (starts at NULL), +sum(w)_n (starts at 0)"
    assert "migrated" in result.message and "starting from savepoint" in result.message


def test_changed_group_keys_are_refused_then_start_empty_when_allowed(
        tmp_path: Path, savepoint: tuple[str, int]) -> None:
    path, position = savepoint
    query = "SELECT k, COUNT(*) AS c, MAX(w) AS m FROM (SELECT v % 3 AS k, v AS w FROM src) GROUP BY k"
    with pytest.raises(ExecutionError) as refused:
        _restored(tmp_path, path, query)
    message = str(refused.value)
    assert "holds state the query would not restore" in message
    assert "keyed/groups (5 rows): no operator of the job has this id" in message
    assert "keyed/values" not in message  # MAX over an insert-only input keeps no values
    assert "ignore-unclaimed-state" in message
    rows = _restored(tmp_path, path, query,
                     **{"execution.savepoint.ignore-unclaimed-state": "true"})
    assert rows == {k: (k, _count(k, position + 1, 3),
                        max(v for v in range(position + 1, ROWS + 1) if v % 3 == k))
                    for k in range(3)}


def test_a_key_of_another_type_is_incompatible_even_when_drops_are_allowed(
        tmp_path: Path, savepoint: tuple[str, int]) -> None:
    query = ("SELECT k, COUNT(*) AS c, MAX(w) AS m FROM "
             "(SELECT v % 5 AS k, CAST(v AS INT) AS w FROM src) GROUP BY k")
    with pytest.raises(ExecutionError, match=r"incompatible with the savepoint: .*keyed/groups: "
                                             r"max\(w\): int64 -> int32"):
        _restored(tmp_path, savepoint[0], query,
                  **{"execution.savepoint.ignore-unclaimed-state": "true"})


def test_reordered_joins_are_refused(tmp_path: Path) -> None:
    old = ("SELECT a.v % 5 AS k, COUNT(*) AS c FROM src a JOIN src2 b ON a.v = b.v "
           "GROUP BY a.v % 5")
    checkpoint = _stopped_midway(tmp_path / "checkpoints", old, 0.5)
    reordered = ("SELECT a.v % 5 AS k, COUNT(*) AS c FROM src2 b JOIN src a ON a.v = b.v "
                 "GROUP BY a.v % 5")
    with pytest.raises(ExecutionError, match=r"join-\w+ keyed/(left|right)"):
        _restored(tmp_path, str(checkpoint), reordered)
