"""``SinkOperator`` forwards the checkpoint hooks to its table sink: an at-least-once sink
(print, blackhole) has no state and prints again what is replayed; the operator's state is
exactly the filesystem sink's."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from flowsql.errors import ExecutionError
from flowsql.planner.catalog import TableEntry
from flowsql.planner.physical import ValuesExec
from flowsql.planner.physical_streaming import SinkExec
from flowsql.planner.schema import Field
from flowsql.runtime.operator import OperatorContext
from flowsql.runtime.operators.sink.connector_sink import RECORDS_WRITTEN, SinkOperator

SCHEMA = pa.schema([("x", pa.int64())])
CHECKPOINTING = {"execution.checkpointing.interval": "1 s"}


def _operator(options: dict[str, str], attempt: int = 0) -> tuple[SinkOperator, OperatorContext]:
    node = ValuesExec((Field.fresh("x", pa.int64()),), (), 0.0)
    operator = SinkOperator(SinkExec(node, TableEntry("out", SCHEMA, options), 0.0))
    context = OperatorContext("sink", dict(CHECKPOINTING), job_id="j", attempt=attempt)
    operator.open(context)
    return operator, context


def _batch(*values: int) -> pa.RecordBatch:
    return pa.record_batch([pa.array(values, pa.int64())], schema=SCHEMA)


def test_print_is_at_least_once(capsys: pytest.CaptureFixture[str]) -> None:
    failed, _ = _operator({"connector": "print"})
    failed.process_batch(0, _batch(1))
    state = failed.snapshot_state(1)
    assert state == {}
    failed.process_batch(0, _batch(2))             # printed, then the job fails
    failed.close()
    restored, context = _operator({"connector": "print"}, attempt=1)
    restored.restore_state(state)
    restored.process_batch(0, _batch(2))           # replayed after checkpoint 1
    restored.notify_checkpoint_complete(1)
    restored.end_input(0)
    restored.close()
    assert capsys.readouterr().out.splitlines() == ["+I[1]", "+I[2]", "+I[2]"]
    assert context.metrics == {RECORDS_WRITTEN: 1}


def test_blackhole_has_no_state() -> None:
    operator, context = _operator({"connector": "blackhole"})
    operator.process_batch(0, _batch(1, 2))
    assert operator.snapshot_state(1) == {}
    operator.notify_checkpoint_complete(1)
    operator.close()
    assert context.metrics == {RECORDS_WRITTEN: 2}


def test_the_operator_state_is_the_file_sinks(tmp_path: Path) -> None:
    options = {"connector": "filesystem", "path": str(tmp_path), "format": "csv"}
    operator, _ = _operator(options)
    operator.process_batch(0, _batch(1, 2))
    state = operator.snapshot_state(3)
    assert sorted(state) == ["list/job-ids", "list/pending-files"]
    assert state["list/pending-files"].column("checkpoint_id").to_pylist() == [3]
    assert [p.name for p in tmp_path.iterdir()] == [".part-j-0-0-0.csv.inprogress"]
    operator.notify_checkpoint_complete(3)
    assert [p.name for p in tmp_path.iterdir()] == ["part-j-0-0-0.csv"]
    assert (tmp_path / "part-j-0-0-0.csv").read_text() == "1\n2\n"
    operator.close()


def test_hooks_after_close() -> None:
    operator, _ = _operator({"connector": "blackhole"})
    operator.close()
    operator.notify_checkpoint_complete(1)          # late notification: nothing to do
    with pytest.raises(ExecutionError, match="after close"):
        operator.snapshot_state(2)
    with pytest.raises(ExecutionError, match="after close"):
        operator.process_batch(0, _batch(1))
