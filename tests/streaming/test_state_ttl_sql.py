"""State time-to-live end to end: a streaming GROUP BY over a watched directory, with
``table.exec.state.ttl`` = 1 s and real time between two bursts of input. Expected rows
are hand-checked against Flink's semantics: a key whose state expired starts afresh (+I
again, its old count forgotten), and a restored job does not bring expired keys back."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import flowsql
from tests.harness.chaos import latest_checkpoint

QUERY = "SELECT k, COUNT(*) AS n, SUM(v) AS s FROM src GROUP BY k"
# longer than the TTL: a burst that comes this long after the previous one's output was
# seen finds the previous burst's keys expired, however slowly the machine runs
PAUSE_S = 1.6


class Consumer:
    """Iterates a streamed SELECT on a thread (its run only advances while iterated), so
    the test can feed the source and wait for the changes."""

    def __init__(self, session: flowsql.Session, query: str) -> None:
        self.result = session.sql(query)
        self.rows: list[tuple[Any, ...]] = []
        self._thread = threading.Thread(target=self._consume, daemon=True)
        self._thread.start()

    def _consume(self) -> None:
        for batch in self.result.stream():
            self.rows.extend(tuple(r.values()) for r in batch.to_pylist())

    def wait_for(self, count: int, timeout_s: float = 60.0) -> list[tuple[Any, ...]]:
        deadline = time.monotonic() + timeout_s
        while len(self.rows) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return list(self.rows)

    def metrics(self) -> list[dict[str, Any]]:
        run = self.result.changelog.run
        return [] if run is None else run.metrics()

    def stop(self) -> None:
        self.result.changelog.cancel()
        self._thread.join(30)
        assert not self._thread.is_alive()


def _session(incoming: Path, **settings: str) -> flowsql.Session:
    session = flowsql.connect(**{"execution.runtime-mode": "streaming",
                                 "table.exec.state.ttl": "1 s", **settings})
    session.sql(f"""CREATE TABLE src (k STRING, v BIGINT) WITH ('connector' = 'filesystem',
                      'path' = '{incoming}', 'format' = 'csv',
                      'source.monitor-interval' = '50 ms')""")
    return session


def _group_state_rows(consumer: Consumer) -> int:
    group = next(m for m in consumer.metrics() if m["operator"].startswith("GroupAggregate"))
    assert group["state_bytes"] > 0
    return int(group["state_rows"])


def test_keys_expire_between_two_bursts(tmp_path: Path) -> None:
    incoming = tmp_path / "in"
    incoming.mkdir()
    with _session(incoming) as session:
        consumer = Consumer(session, QUERY)
        try:
            (incoming / "1.csv").write_text("a,1\nb,2\na,3\n")
            first = consumer.wait_for(4)
            assert first == [("+I", "a", 1, 1), ("+I", "b", 1, 2),
                             ("-U", "a", 1, 1), ("+U", "a", 2, 4)]
            assert _group_state_rows(consumer) == 2
            time.sleep(PAUSE_S)
            (incoming / "2.csv").write_text("a,5\nc,7\n")
            # a starts afresh (count 1, not 3); b expired too and is dropped from state
            assert consumer.wait_for(6)[4:] == [("+I", "a", 1, 5), ("+I", "c", 1, 7)]
            assert _group_state_rows(consumer) == 2
        finally:
            consumer.stop()
        assert len(consumer.rows) == 6


def test_restored_job_does_not_bring_expired_keys_back(tmp_path: Path) -> None:
    incoming, checkpoints = tmp_path / "in", tmp_path / "checkpoints"
    incoming.mkdir()
    checkpointing = {"execution.checkpointing.interval": "100 ms",
                     "execution.checkpointing.dir": str(checkpoints),
                     "execution.checkpointing.num-retained": "100"}
    with _session(incoming, **checkpointing) as session:
        consumer = Consumer(session, QUERY)
        try:
            (incoming / "1.csv").write_text("a,1\na,3\n")
            assert consumer.wait_for(3) == [("+I", "a", 1, 1), ("-U", "a", 1, 1),
                                            ("+U", "a", 2, 4)]
            # a checkpoint that completes from now on holds the group a
            seen = latest_checkpoint(checkpoints)
            deadline = time.monotonic() + 60
            while latest_checkpoint(checkpoints) == seen and time.monotonic() < deadline:
                time.sleep(0.05)
            checkpoint = latest_checkpoint(checkpoints)
            assert checkpoint is not None and checkpoint != seen
        finally:
            consumer.stop()
    (incoming / "2.csv").write_text("a,5\n")

    def resumed(ttl: str, expected: int) -> list[tuple[Any, ...]]:
        with _session(incoming, **{"execution.savepoint.path": str(checkpoint),
                                   "table.exec.state.ttl": ttl}) as session:
            consumer = Consumer(session, QUERY)
            try:
                consumer.wait_for(expected)
                time.sleep(0.3)  # a change too many would show up here
                return list(consumer.rows)
            finally:
                consumer.stop()

    # without TTL the restored job still knows a (the checkpoint holds it); it is read
    # first, so its processing-time age is PAUSE_S at least when the TTL run restores
    assert resumed("0", 2) == [("-U", "a", 2, 4), ("+U", "a", 3, 9)]
    time.sleep(PAUSE_S)
    assert resumed("1 s", 1) == [("+I", "a", 1, 5)]
