"""Task kinds: what a deployed task runs, named by data so a deployment stays JSON.

A task kind is a function ``run(context) -> result`` where ``result`` is a JSON-able mapping
(or None) reported back to the coordinator. The worker owns the protocol around it: it
creates the channels from the deployment descriptor, calls ``run``, and on return finishes
every output with ``EndOfInput``; on an exception it aborts all the task's channels so
neighbours fail fast instead of waiting. A kind must therefore only read ``inputs`` and
write ``outputs`` and should check ``cancelled`` when it loops without touching a channel
(channel calls raise ChannelError once the task is cancelled).

``TASK_KINDS`` maps short names to ``"package.module:function"`` paths; a deployment may
also name a path directly, which is how the job-graph runner plugs its operator chains in
without this module knowing them. Workers import a kind's module on first use.
"""

from __future__ import annotations

import importlib
import queue
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowsql.errors import ExecutionError
from flowsql.runtime.channels import BufferedWriter, InputGate

TASK_KINDS: dict[str, str] = {
    "generate": "flowsql.runtime.cluster.diagnostic_tasks:generate",
    "count": "flowsql.runtime.cluster.diagnostic_tasks:count",
    "fail": "flowsql.runtime.cluster.diagnostic_tasks:fail",
    "grep_source": "flowsql.runtime.cluster.benchmark_tasks:grep_source",
    "latency_sink": "flowsql.runtime.cluster.benchmark_tasks:latency_sink",
}


@dataclass
class TaskContext:
    """Everything a running task may use; ``inputs`` and ``outputs`` follow the order of
    the edges in the job's deployment."""

    job: str
    name: str
    subtask: int
    config: Mapping[str, Any]
    settings: Mapping[str, str]
    inputs: InputGate
    outputs: list[BufferedWriter]
    cancelled: threading.Event
    #: sends a progress report (JSON-able) to the coordinator while the task runs; the
    #: job keeps the latest one per task (``Job.progress``)
    report: Callable[[dict[str, Any]], None] = field(default=lambda _: None)
    #: messages the coordinator sent to the job's tasks (checkpoint triggers, completion
    #: notices, stop), in the order sent; a task that does not checkpoint ignores them
    commands: queue.SimpleQueue[dict[str, Any]] = field(default_factory=queue.SimpleQueue)
    #: sends a message (JSON-able) to the job's listener in the coordinator
    send: Callable[[dict[str, Any]], None] = field(default=lambda _: None)

    @property
    def task_id(self) -> str:
        return f"{self.name}[{self.subtask}]"


TaskFunction = Callable[[TaskContext], Mapping[str, Any] | None]


def check_task_kind(kind: str) -> None:
    """Reject a kind that can name no function, before anything is deployed."""
    if kind not in TASK_KINDS and ":" not in kind:
        raise ExecutionError(f"unknown task kind '{kind}' (known: {', '.join(sorted(TASK_KINDS))};"
                             " or name a function as 'package.module:function')")


def resolve_task_kind(kind: str) -> TaskFunction:
    check_task_kind(kind)
    module_name, _, attribute = TASK_KINDS.get(kind, kind).partition(":")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ExecutionError(f"task kind '{kind}' does not resolve: {exc}") from exc
    if not callable(function):
        raise ExecutionError(f"task kind '{kind}' is not a function")
    return function  # type: ignore[no-any-return]
