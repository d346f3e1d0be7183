"""A streaming job stopped (cancel takes a final checkpoint) and started again from that
checkpoint at another parallelism -- 1, then 2, then 4, then 1 again -- commits exactly the
output of one uninterrupted run.

The sources are watched directories (``'source.monitor-interval'``): their state (files
read, rows emitted of the open file) is union list state, so they rescale, and each phase
adds one file of rows, so every phase has new rows and state carried over from before.
Keeping the comparison exact:

* each phase's rows are later in event time than every earlier phase's, in order, split
  into one file per source subtask (consecutive ranges, file names in that order, each
  file named so that a different subtask reads it): no subtask is idle, the watermark is
  the minimum over all of them, so no row is late -- in this run nor in the uninterrupted
  one, which reads the same files in name order;
* a last file holds sentinel rows far in the future: the first (``SENTINEL``) is output
  once everything before it is (its window fires, its join pair meets, its OVER row is
  emitted on the second sentinel's watermark), the second (``SENTINEL_2``) produces nothing
  itself. A run is complete once a row of ``SENTINEL`` is committed, and the uninterrupted
  run is stopped the same way.

Operator state moves between parallelisms by key group (``StateStore`` keeps the key groups
a subtask owns), and it is found by the operator ids, which must not depend on the
parallelism.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.csv as pacsv
import pytest

import flowsql
from flowsql.errors import ExecutionError
from flowsql.runtime.connectors.watch import owner
from tests.harness.chaos import committed_rows, latest_checkpoint

ROWS_PER_PHASE = 400
PHASES = (1, 2, 4, 1)
#: the first sentinel's ``v``; its event time is ten thousand seconds
SENTINEL = 1_000_000
SENTINEL_2 = 2_000_000


def _event_ms(v: int) -> int:
    """10 ms per row and a pause of one second after every 100 rows (sessions close); the
    sentinels at ten thousand seconds (70 ms apart, as join partners ``v`` and ``v - 7``
    are) and twenty thousand."""
    sentinels = {SENTINEL - 7: 10_000_000, SENTINEL: 10_000_070, SENTINEL_2: 20_000_000}
    return sentinels.get(v, v * 10 + (v // 100) * 1_000)


def _write_rows(directory: Path, name: str, values: list[int]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    table = pa.table({"v": pa.array(values, pa.int64()),
                      "k": pa.array([v % 23 for v in values], pa.int32()),
                      "ts": pa.array([_event_ms(v) for v in values], pa.timestamp("ms"))})
    hidden = directory / f".{name}"
    pacsv.write_csv(table, hidden, pacsv.WriteOptions(include_header=False))
    hidden.rename(directory / name)  # a watched directory must see whole files only


def _phase_file(directories: list[Path], phase: int, parallelism: int) -> None:
    """The rows of ``phase`` in one file per source subtask, read by subtask ``j``
    (files go to subtasks by a hash of their name): every subtask has rows, so none is
    idle and the watermark is the minimum over all of them, as in the uninterrupted run."""
    first = phase * ROWS_PER_PHASE + 1
    values = list(range(first, first + ROWS_PER_PHASE))
    share = -(-ROWS_PER_PHASE // parallelism)
    for subtask in range(parallelism):
        name = next(n for n in (f"part-{phase}-{subtask}-{tag}.csv" for tag in range(1000))
                    if owner(n, parallelism) == subtask)
        for directory in directories:
            _write_rows(directory, name, values[subtask * share:(subtask + 1) * share])


def _sentinel_file(directories: list[Path]) -> None:
    # SENTINEL - 7 is the join partner of SENTINEL (a.v = b.v + 7)
    for directory in directories:
        _write_rows(directory, "part-9.csv", [SENTINEL - 7, SENTINEL, SENTINEL_2])


def _source_ddl(name: str, directory: Path) -> str:
    return (f"CREATE TABLE {name} (v BIGINT, k INT, ts TIMESTAMP(3), "
            "WATERMARK FOR ts AS ts - INTERVAL '1' SECOND) WITH ("
            f"'connector' = 'filesystem', 'path' = '{directory}', 'format' = 'csv', "
            "'source.monitor-interval' = '100 ms')")


WINDOW = "ws TIMESTAMP(3), we TIMESTAMP(3), k INT, c BIGINT, s BIGINT"
_WINDOW_SELECT = ("SELECT window_start, window_end, k, COUNT(*), SUM(v) FROM TABLE({tvf}) "
                  "GROUP BY window_start, window_end, k")


def _window_done(rows: Counter[tuple[Any, ...]]) -> bool:
    """A window of the sentinels (nothing else starts that late) is committed."""
    late = datetime(1970, 1, 1) + timedelta(milliseconds=_event_ms(SENTINEL - 7) - 2_000)
    return any(row[0] >= late for row in rows)


def _v_done(rows: Counter[tuple[Any, ...]]) -> bool:
    return any(row[0] == SENTINEL for row in rows)


#: name -> (sink columns, SELECT, whether the SENTINEL output is committed)
QUERIES: dict[str, tuple[str, str, Callable[[Counter[tuple[Any, ...]]], bool]]] = {
    "tumble": (WINDOW, _WINDOW_SELECT.format(
        tvf="TUMBLE(TABLE src, DESCRIPTOR(ts), INTERVAL '1' SECOND)"), _window_done),
    "hop": (WINDOW, _WINDOW_SELECT.format(
        tvf="HOP(TABLE src, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND, INTERVAL '1' SECOND)"),
        _window_done),
    "cumulate": (WINDOW, _WINDOW_SELECT.format(
        tvf="CUMULATE(TABLE src, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND, "
            "INTERVAL '2' SECOND)"), _window_done),
    "session": (WINDOW, _WINDOW_SELECT.format(
        tvf="SESSION(TABLE src PARTITION BY k, DESCRIPTOR(ts), INTERVAL '500' MILLISECOND)"),
        _window_done),
    "regular_join": ("v BIGINT, w BIGINT, k INT",
                     "SELECT a.v, b.v, b.k FROM src a JOIN src2 b ON a.v = b.v + 7", _v_done),
    "interval_join": ("v BIGINT, w BIGINT",
                      "SELECT a.v, b.v FROM src a JOIN src2 b ON a.v = b.v + 7 AND "
                      "b.ts BETWEEN a.ts - INTERVAL '1' SECOND AND a.ts", _v_done),
    "over": ("v BIGINT, k INT, c BIGINT, s BIGINT",
             "SELECT v, k, COUNT(*) OVER w, SUM(v) OVER w FROM src WINDOW w AS ("
             "PARTITION BY k ORDER BY ts ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)",
             _v_done),
}


def _session(tmp: Path, query: str | None, parallelism: int, backend: str, checkpoints: Path,
             out: Path | None, restore: Path | None, **settings: str) -> Any:
    """A session with the sources and, for an append-only ``query``, its sink table."""
    session = flowsql.connect(**settings, **{
        "execution.runtime-mode": "streaming", "parallelism.default": str(parallelism),
        "execution.checkpointing.interval": "200 ms",
        "execution.checkpointing.dir": str(checkpoints),
        "state.backend.type": backend})
    session.sql(_source_ddl("src", tmp / "src"))
    session.sql(_source_ddl("src2", tmp / "src2"))
    if query is not None:
        session.sql(f"CREATE TABLE out_t ({QUERIES[query][0]}) WITH ("
                    f"'connector' = 'filesystem', 'path' = '{out}', 'format' = 'parquet')")
    if restore is not None:
        session.sql(f"SET 'execution.savepoint.path' = '{restore}'")
    return session


def _run(tmp: Path, query: str, parallelism: int, backend: str, out: Path,
         restore: Path | None, until: Callable[[Counter[tuple[Any, ...]]], bool],
         checkpoints: Path, timeout_s: float = 60.0) -> Path:
    """Run the INSERT until ``until(committed rows)``, cancel (a final checkpoint) and
    return the latest completed checkpoint."""
    session = _session(tmp, query, parallelism, backend, checkpoints, out, restore)
    try:
        job = session.sql(f"INSERT INTO out_t {QUERIES[query][1]}").job
        deadline = time.monotonic() + timeout_s
        while not until(committed_rows(out)):
            assert job.status() not in ("FAILED", "FINISHED", "CANCELED"), (
                f"{query} at parallelism {parallelism}: the job ended {job.status()}: "
                f"{job.info()}")
            assert time.monotonic() < deadline, (
                f"{query} at parallelism {parallelism}: no progress in {timeout_s} s")
            time.sleep(0.1)
        job.cancel()
        assert job.wait(60) == "CANCELED"
    finally:
        session.close()
    # the restore point: the cancel's final checkpoint, or, when that one did not complete
    # (it can fail under load), the latest one before it: then the sink's pending files of
    # the failed one stay hidden until the next run restores and rewrites their rows
    checkpoint = latest_checkpoint(checkpoints)
    assert checkpoint is not None, "no checkpoint completed"
    return checkpoint


def _grew(before: int) -> Callable[[Counter[tuple[Any, ...]]], bool]:
    return lambda rows: sum(rows.values()) > before


def _check(tmp_path: Path, query: str, backend: str, phases: tuple[int, ...] = PHASES) -> None:
    done = QUERIES[query][2]
    # the uninterrupted run: every file there from the start
    baseline_dir = tmp_path / "baseline"
    sources = [baseline_dir / "src", baseline_dir / "src2"]
    for phase, parallelism in enumerate(phases):
        _phase_file(sources, phase, parallelism)
    _sentinel_file(sources)
    _run(baseline_dir, query, 1, backend, baseline_dir / "out", None, done,
         baseline_dir / "checkpoints")
    expected = committed_rows(baseline_dir / "out")

    rescaled = tmp_path / "rescaled"
    sources = [rescaled / "src", rescaled / "src2"]
    out = rescaled / "out"
    restore = None
    for phase, parallelism in enumerate(phases):
        _phase_file(sources, phase, parallelism)
        last = phase == len(phases) - 1
        if last:
            _sentinel_file(sources)
        until = done if last else _grew(sum(committed_rows(out).values()))
        restore = _run(rescaled, query, parallelism, backend, out, restore, until,
                       rescaled / f"checkpoints-{phase}")
    rows = committed_rows(out)
    missing, extra = expected - rows, rows - expected
    assert not missing and not extra, (
        f"{query} rescaled {' -> '.join(map(str, phases))} on {backend}: "
        f"{sum(missing.values())} rows missing (e.g. {list(missing)[:3]}), "
        f"{sum(extra.values())} extra (e.g. {list(extra)[:3]})")


# -- updating results, streamed to the client ---------------------------------------------------

def _last_row_seen(key: int) -> Callable[[dict[tuple[Any, ...], tuple[Any, ...]]], bool]:
    """The row of ``SENTINEL_2`` (the last of all) has reached the result."""
    return lambda rows: any(row[0] == key and SENTINEL_2 in row for row in rows.values())


#: name -> (key width, SELECT, whether the materialized result is complete); the
#: results are updating, so they are streamed and kept as an upsert sink keeps them
UPDATING: dict[str, tuple[int, str, Callable[[dict[tuple[Any, ...], tuple[Any, ...]]], bool]]] = {
    "group_by": (1, "SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM src GROUP BY k",
                 _last_row_seen(SENTINEL_2 % 23)),
    "top_n": (2, "SELECT k, rn, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
                 "ORDER BY v DESC) AS rn FROM src) WHERE rn <= 3",
              _last_row_seen(SENTINEL_2 % 23)),
    "deduplicate": (1, "SELECT k, v FROM (SELECT k, v, ROW_NUMBER() OVER (PARTITION BY k "
                       "ORDER BY ts DESC) AS rn FROM src) WHERE rn = 1",
                    _last_row_seen(SENTINEL_2 % 23)),
}


def _stream(tmp: Path, query: str, parallelism: int, backend: str, restore: Path | None,
            rows: dict[tuple[Any, ...], tuple[Any, ...]], done: Callable[[Any], bool],
            checkpoints: Path) -> Path:
    """Stream the query's changes into ``rows`` (latest row per key) until ``done(rows)``,
    cancel (a final checkpoint), take the changes still coming, return that checkpoint."""
    width, select, _ = UPDATING[query]
    session = _session(tmp, None, parallelism, backend, checkpoints, None, restore)
    try:
        result = session.sql(select)
        stop, lock = threading.Event(), threading.Lock()

        def cancel_when_done() -> None:
            # the stream blocks between changes: the cancel comes from here, once the
            # result is complete and a checkpoint completed (the restore point)
            while not stop.wait(0.05):
                with lock:
                    complete = done(rows)
                if complete and latest_checkpoint(checkpoints) is not None:
                    result.changelog.cancel()
                    return

        watcher = threading.Thread(target=cancel_when_done, daemon=True)
        watcher.start()
        try:
            for batch in result.stream():
                ops = batch.column(0).to_pylist()
                values = zip(*(batch.column(i).to_pylist()
                               for i in range(1, batch.num_columns)))
                with lock:
                    for op, row in zip(ops, values):
                        if op in ("+I", "+U"):
                            rows[row[:width]] = row
                        elif op == "-D":
                            rows.pop(row[:width], None)
        finally:
            stop.set()
            watcher.join()
    finally:
        session.close()
    checkpoint = latest_checkpoint(checkpoints)
    assert checkpoint is not None, "no checkpoint completed"
    return checkpoint


def _check_updating(tmp_path: Path, query: str, backend: str,
                    phases: tuple[int, ...] = PHASES) -> None:
    done = UPDATING[query][2]
    baseline_dir = tmp_path / "baseline"
    sources = [baseline_dir / "src"]
    for phase, parallelism in enumerate(phases):
        _phase_file(sources, phase, parallelism)
    _sentinel_file(sources)
    expected: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    _stream(baseline_dir, query, 1, backend, None, expected, done,
            baseline_dir / "checkpoints")

    rescaled = tmp_path / "rescaled"
    sources = [rescaled / "src"]
    rows: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    restore = None
    for phase, parallelism in enumerate(phases):
        _phase_file(sources, phase, parallelism)
        last = phase == len(phases) - 1
        if last:
            _sentinel_file(sources)
        before = dict(rows)
        restore = _stream(rescaled, query, parallelism, backend, restore, rows,
                          done if last else (lambda now, before=before: now != before),
                          rescaled / f"checkpoints-{phase}")
    assert rows == expected, (
        f"{query} rescaled {' -> '.join(map(str, phases))} on {backend}: "
        f"{len(set(expected.items()) - set(rows.items()))} result rows differ, e.g. "
        f"{sorted(set(expected.items()) ^ set(rows.items()), key=repr)[:4]}")


#: what CI runs (each test is four jobs and a baseline, 15-25 s); ``-m slow`` runs the rest
FAST = [("tumble", "hashmap"), ("over", "rocksdb")]
FAST_UPDATING = [("group_by", "hashmap")]


@pytest.mark.parametrize(("query", "backend"), FAST)
def test_rescaled_run_commits_the_uninterrupted_output(tmp_path: Path, query: str,
                                                       backend: str) -> None:
    _check(tmp_path, query, backend)


@pytest.mark.parametrize(("query", "backend"), FAST_UPDATING)
def test_rescaled_updating_result_is_the_uninterrupted_result(tmp_path: Path, query: str,
                                                               backend: str) -> None:
    _check_updating(tmp_path, query, backend)


@pytest.mark.slow
@pytest.mark.parametrize(("query", "backend"),
                         [(q, b) for q in sorted(QUERIES) for b in ("hashmap", "rocksdb")
                          if (q, b) not in FAST])
def test_rescaled_run_commits_the_uninterrupted_output_every_query(
        tmp_path: Path, query: str, backend: str) -> None:
    _check(tmp_path, query, backend)


@pytest.mark.slow
@pytest.mark.parametrize(("query", "backend"),
                         [(q, b) for q in sorted(UPDATING) for b in ("hashmap", "rocksdb")
                          if (q, b) not in FAST_UPDATING])
def test_rescaled_updating_result_is_the_uninterrupted_result_every_query(
        tmp_path: Path, query: str, backend: str) -> None:
    _check_updating(tmp_path, query, backend)


def test_a_restore_with_another_max_parallelism_fails_naming_both_values(
        tmp_path: Path) -> None:
    """``pipeline.max-parallelism`` fixes the key groups for the life of the state."""
    sources = [tmp_path / "src", tmp_path / "src2"]
    _phase_file(sources, 0, 1)
    out = tmp_path / "out"
    checkpoint = _run(tmp_path, "tumble", 1, "hashmap", out, None, _grew(0),
                      tmp_path / "checkpoints-0")
    session = _session(tmp_path, "tumble", 2, "hashmap", tmp_path / "checkpoints-1", out,
                       checkpoint, **{"pipeline.max-parallelism": "64",
                                      "restart-strategy.type": "none"})
    try:
        job = session.sql(f"INSERT INTO out_t {QUERIES['tumble'][1]}").job
        with pytest.raises(ExecutionError) as failure:
            job.wait(60)
    finally:
        session.close()
    message = str(failure.value)
    assert "pipeline.max-parallelism 128" in message, message
    assert "pipeline.max-parallelism 64" in message, message
