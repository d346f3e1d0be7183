"""The coordinator's end of a job's result: the channels the root stage's subtasks send
their batches on, registered before the job is submitted and read until every one ended."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pyarrow as pa

from flowsql.errors import ExecutionError
from flowsql.runtime.channels import (
    ChannelError,
    ChannelServer,
    ChannelSettings,
    InputGate,
    RemoteInputChannel,
)
from flowsql.runtime.cluster import Job
from flowsql.runtime.cluster.coordinator import SYMPTOM_GRACE_S

_POLL_S = 0.1


def register_results(server: ChannelServer, names: list[str], settings: dict[str, str]
                     ) -> list[RemoteInputChannel]:
    """The coordinator's result channels, registered before the job is submitted."""
    credits = ChannelSettings.from_settings(settings).credits
    channels = [RemoteInputChannel(name, credits) for name in names]
    for channel in channels:
        server.register(channel)
    return channels


def unregister_results(server: ChannelServer, channels: list[RemoteInputChannel]) -> None:
    for channel in channels:
        channel.abort("the query ended")
        server.unregister(channel.name)


def receive_results(job: Job, channels: list[RemoteInputChannel],
                    cancelled: threading.Event | None = None) -> Iterator[pa.RecordBatch]:
    """The result batches as they arrive (each sending subtask's in its order) until every
    channel ended; stops early, cancelling the job, once ``cancelled`` is set. A failed job
    raises its error; a consumer that stops reading cancels the job."""
    gate = InputGate(channels)
    try:
        while not gate.finished:
            if cancelled is not None and cancelled.is_set():
                job.cancel()
                return
            if job.error is not None:
                raise job.error
            item = gate.next(timeout=_POLL_S)
            if item is not None and isinstance(item[1], pa.RecordBatch):
                yield item[1]
    except ChannelError as exc:
        job.result(SYMPTOM_GRACE_S + 2)  # raises the root cause when there is one
        raise ExecutionError(f"the query's result channel broke: {exc}") from exc
    except BaseException:
        job.cancel()
        raise
    job.result()
