"""The embedded mini-cluster: a coordinator in the calling process and N worker processes.

Guarantees, and how they are kept:

* **No hang on failure.** A task failure is reported by its worker at once; the job fails
  with the task's id and error and is cancelled everywhere. A worker that dies is noticed
  when its control connection closes (immediate, even on SIGKILL) or, if it hangs, when its
  heartbeats stop for ``heartbeat_timeout`` seconds; every unfinished job with a task on it
  fails naming the worker, its pid and how it ended. A task that failed only because a
  channel broke is usually a symptom of a lost worker, so its report waits briefly for the
  root cause before it becomes the job's error.
* **No orphan processes.** ``close`` (also via ``with`` and ``atexit``) asks workers to shut
  down, then kills what is left and reaps every process. If the coordinator process itself
  dies, workers see their control connection close and exit on their own.
* **Data, not code.** Deployments and reports are JSON (protocol.py); data goes worker to worker
  over channels as Arrow IPC.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowsql.errors import ExecutionError
from flowsql.runtime.cluster.deployment import EdgeSpec, TaskSpec, plan_deployment
from flowsql.runtime.cluster.protocol import Message, MessageWriter, read_message

#: how long a failure caused by a broken channel waits for a worker loss to explain it
SYMPTOM_GRACE_S = 3.0


class Job:
    """A submitted job: wait for it with ``result``, stop it with ``cancel``."""

    def __init__(self, cluster: MiniCluster, job_id: str, placement: dict[str, int]) -> None:
        self.id = job_id
        self.placement = placement
        self.results: dict[str, dict[str, Any]] = {}
        #: the latest progress report of each running task (see ``TaskContext.report``)
        self.progress: dict[str, dict[str, Any]] = {}
        self.error: ExecutionError | None = None
        self._failures: list[ExecutionError] = []
        self._pending = set(placement)
        self._cluster = cluster
        self._done = threading.Event()
        self._terminated = threading.Event()
        #: receives ``(task id, message)`` for every message a task sends
        #: (``TaskContext.send``), on the cluster's reader thread of that worker
        self.on_message: Callable[[str, dict[str, Any]], None] | None = None
        #: called with the task id whenever a task finishes successfully
        self.on_task_finished: Callable[[str], None] | None = None

    def result(self, timeout: float | None = None) -> dict[str, dict[str, Any]]:
        """Every task's result by task id; raises the job's ExecutionError if it failed,
        and ExecutionError if it is still running after ``timeout`` seconds."""
        if not self._done.wait(timeout):
            raise ExecutionError(f"job {self.id} still running after {timeout} s "
                                 f"(waiting for {', '.join(sorted(self._pending))})")
        if self.error is not None:
            raise self.error
        return dict(self.results)

    def cancel(self) -> None:
        self._cluster._fail_job(self, ExecutionError(f"job {self.id} was cancelled"))

    def fail(self, error: ExecutionError) -> None:
        """Fail the job with ``error`` (the first failure wins) and cancel its tasks."""
        self._cluster._fail_job(self, error)

    def send(self, message: dict[str, Any]) -> None:
        """Deliver ``message`` to every task of the job (``TaskContext.commands``); the
        tasks of one worker get the messages in the order they were sent."""
        for index in sorted(set(self.placement.values())):
            self._cluster.workers[index].send({"type": "job_message", "job": self.id,
                                               "message": message})

    def wait_terminated(self, timeout: float) -> bool:
        """True once every task has reported (finished, failed or cancelled) or its worker is
        lost: nothing of the job runs any more."""
        return self._terminated.wait(timeout)

    def _task_ended(self, task_id: str) -> None:
        self._pending.discard(task_id)
        if not self._pending:
            if self.error is None and self._failures:
                self.error = self._failures[0]  # a symptom whose grace had not run out
            self._done.set()
            self._terminated.set()


class _WorkerHandle:
    def __init__(self, index: int, process: subprocess.Popen[bytes]) -> None:
        self.index = index
        self.process = process
        self.writer: MessageWriter | None = None
        self.sock: socket.socket | None = None
        self.data_address: tuple[str, int] = ("", 0)
        self.last_seen = time.monotonic()
        self.lost: str | None = None

    def send(self, message: Message) -> None:
        if self.writer is not None and self.lost is None:
            with contextlib.suppress(OSError):  # the reader thread reports the loss
                self.writer.send(message)

    def describe(self) -> str:
        return f"worker {self.index} (pid {self.process.pid})"


class MiniCluster:
    """Starts ``workers`` worker processes on this machine; use as a context manager."""

    def __init__(self, workers: int = 2, *, heartbeat_interval: float = 0.5,
                 heartbeat_timeout: float = 15.0, startup_timeout: float = 60.0) -> None:
        if workers < 1:
            raise ExecutionError("a cluster needs at least one worker")
        self.heartbeat_interval = heartbeat_interval
        self.heartbeat_timeout = heartbeat_timeout
        self._lock = threading.RLock()
        self._jobs: dict[str, Job] = {}
        self._job_ids = itertools.count(1)
        self._closed = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.workers: list[_WorkerHandle] = []
        atexit.register(self.close)
        try:
            self._start_workers(workers, startup_timeout)
        except BaseException:
            self.close()
            raise
        threading.Thread(target=self._monitor, name="cluster monitor", daemon=True).start()

    def __enter__(self) -> MiniCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pids(self) -> list[int]:
        return [worker.process.pid for worker in self.workers]

    def submit(self, tasks: Sequence[TaskSpec], edges: Sequence[EdgeSpec] = (),
               settings: Mapping[str, str] | None = None) -> Job:
        """Deploy a job and return at once; tasks start as soon as their worker gets them."""
        with self._lock:
            if self._closed:
                raise ExecutionError("the cluster is closed")
            lost = [w.describe() + f" ({w.lost})" for w in self.workers if w.lost]
            if lost:
                raise ExecutionError(f"cannot run a job: {', '.join(lost)} was lost; "
                                     "start a new cluster")
            job_id = f"job-{next(self._job_ids)}"
            deployment = plan_deployment(job_id, tasks, edges,
                                         [w.data_address for w in self.workers],
                                         settings or {})
            job = Job(self, job_id, {f"{d['name']}[{d['subtask']}]": w for w, d in deployment})
            self._jobs[job_id] = job
        for worker, descriptor in deployment:
            self.workers[worker].send({"type": "deploy", "task": descriptor})
        return job

    def run(self, tasks: Sequence[TaskSpec], edges: Sequence[EdgeSpec] = (),
            settings: Mapping[str, str] | None = None,
            timeout: float | None = None) -> dict[str, dict[str, Any]]:
        """Submit and wait; a timeout cancels the job before raising."""
        job = self.submit(tasks, edges, settings)
        try:
            return job.result(timeout)
        finally:
            if job.error is None and not job._done.is_set():
                job.cancel()

    def close(self) -> None:
        """Stop every worker and reap it; idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for job in list(self._jobs.values()):
                self._fail_job(job, ExecutionError(f"job {job.id} stopped: the cluster closed"))
        for worker in self.workers:
            worker.send({"type": "shutdown"})
        deadline = time.monotonic() + 5
        for worker in self.workers:
            try:
                worker.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                worker.process.kill()
                worker.process.wait()
            if worker.sock is not None:
                worker.sock.close()
        self._listener.close()
        atexit.unregister(self.close)

    # -- start-up ---------------------------------------------------------------------------

    def _start_workers(self, count: int, timeout: float) -> None:
        self.workers = [_WorkerHandle(index, self._spawn(index, count))
                        for index in range(count)]
        self._await_hello(set(range(count)), timeout)

    def replace_lost_workers(self, timeout: float = 60.0) -> list[int]:
        """Start a new process for every lost worker, at the same index (a restarted job's
        placement stays valid); returns the indexes replaced."""
        with self._lock:
            if self._closed:
                raise ExecutionError("the cluster is closed")
            lost = [w.index for w in self.workers
                    if w.lost is not None or w.process.poll() is not None]
            for index in lost:
                old = self.workers[index]
                if old.sock is not None:
                    old.sock.close()
                self.workers[index] = _WorkerHandle(index, self._spawn(index,
                                                                        len(self.workers)))
        if lost:
            self._await_hello(set(lost), timeout)
        return lost

    def _spawn(self, index: int, count: int) -> subprocess.Popen[bytes]:
        host, port = self._listener.getsockname()[:2]
        # The workers share this machine's cores instead of each assuming all of them.
        env = {**os.environ,
               "FLOWSQL_WORKER_THREADS": str(max(1, (os.cpu_count() or 1) // count))}
        # a process group of its own: a Ctrl-C in the shell's terminal goes to the shell's
        # group only, also while the worker is still starting (before it ignores SIGINT)
        return subprocess.Popen(
            [sys.executable, "-m", "flowsql.runtime.cluster.worker",
             "--coordinator", f"{host}:{port}", "--worker-id", str(index),
             "--heartbeat", str(self.heartbeat_interval)],
            stdin=subprocess.DEVNULL, env=env, process_group=0)

    def _await_hello(self, indexes: set[int], timeout: float) -> None:
        """Accept the control connections of the workers at ``indexes``."""
        deadline = time.monotonic() + timeout
        waiting = set(indexes)
        while waiting:
            self._listener.settimeout(0.5)
            try:
                sock, _ = self._listener.accept()
            except TimeoutError:
                for worker in (self.workers[i] for i in waiting):
                    if worker.process.poll() is not None:
                        worker.lost = f"exited during start-up with code {worker.process.returncode}"
                        raise ExecutionError(f"{worker.describe()} exited during start-up "
                                             f"with code {worker.process.returncode}") from None
                if time.monotonic() > deadline:
                    raise ExecutionError(f"workers did not start within {timeout} s") from None
                continue
            sock.settimeout(None)
            stream = sock.makefile("rb")
            hello = read_message(stream)
            if hello is None or hello.get("type") != "hello":
                sock.close()
                continue
            index = int(hello["worker"])
            if index not in waiting:
                sock.close()
                continue
            worker = self.workers[index]
            worker.sock, worker.writer = sock, MessageWriter(sock)
            worker.data_address = (hello["data_host"], int(hello["data_port"]))
            worker.last_seen = time.monotonic()
            threading.Thread(target=self._read_worker, args=(worker, stream),
                             name=f"control {worker.index}", daemon=True).start()
            waiting.discard(index)

    # -- reports and failure detection ------------------------------------------------------

    def _read_worker(self, worker: _WorkerHandle, stream: Any) -> None:
        while (message := read_message(stream)) is not None:
            worker.last_seen = time.monotonic()
            if message["type"] != "heartbeat":
                self._on_report(worker, message)
        self._on_worker_lost(worker, "its control connection closed")

    def _on_report(self, worker: _WorkerHandle, message: Message) -> None:
        with self._lock:
            job = self._jobs.get(message.get("job", ""))
        if job is None:
            return
        task = message["task"]
        kind = message["type"]
        if kind == "task_progress":
            job.progress[task] = message["progress"]
            return
        if kind == "task_message":
            if job.on_message is not None:
                try:
                    job.on_message(task, message["message"])
                except Exception as problem:  # the reader thread must keep reading
                    self._fail_job(job, ExecutionError(
                        f"job {job.id}: handling a message of task {task} failed: "
                        f"{type(problem).__name__}: {problem}"))
            return
        if kind == "task_finished":
            job.results[task] = message["result"]
            if job.on_task_finished is not None:
                try:
                    job.on_task_finished(task)
                except Exception as problem:
                    self._fail_job(job, ExecutionError(
                        f"job {job.id}: the end of task {task} could not be handled: "
                        f"{type(problem).__name__}: {problem}"))
        elif kind == "task_failed":
            error = ExecutionError(f"task {task} of {job.id} failed on {worker.describe()}: "
                                   f"{message['error']}")
            job._failures.append(error)
            if message.get("channel_error"):
                threading.Timer(SYMPTOM_GRACE_S, self._fail_job, (job, error)).start()
            else:
                self._fail_job(job, error)
        with self._lock:
            job._task_ended(task)
            if job._terminated.is_set():
                self._jobs.pop(job.id, None)

    def _fail_job(self, job: Job, error: ExecutionError) -> None:
        """First failure wins; the rest of the job is cancelled on every worker."""
        with self._lock:
            if job._done.is_set():
                return
            job.error = error
            job._done.set()
        for worker in self.workers:
            worker.send({"type": "cancel", "job": job.id})

    def _on_worker_lost(self, worker: _WorkerHandle, reason: str) -> None:
        with self._lock:
            if worker.lost is not None or self._closed:
                return
            worker.lost = reason  # claimed: the reader and the monitor may both get here
        try:  # the connection closes while the process exits: let it become waitable
            code = worker.process.wait(1.0)
            reason = (f"killed by {signal.Signals(-code).name}" if code < 0
                      else f"exited with code {code}")
        except subprocess.TimeoutExpired:  # hung, or alive without a connection: useless now
            worker.process.kill()
            worker.process.wait()
        with self._lock:
            worker.lost = reason
            affected = [job for job in self._jobs.values()
                        if any(job.placement[task] == worker.index for task in job._pending)]
        for job in affected:
            self._fail_job(job, ExecutionError(f"{worker.describe()} was lost ({reason}) while "
                                               f"running job {job.id}"))
            with self._lock:
                for task in [t for t in job._pending if job.placement[t] == worker.index]:
                    job._task_ended(task)

    def _monitor(self) -> None:
        while not self._closed:
            time.sleep(self.heartbeat_interval)
            for worker in self.workers:
                if worker.lost is not None:
                    continue
                if worker.process.poll() is not None:
                    self._on_worker_lost(worker, "the process ended")
                elif time.monotonic() - worker.last_seen > self.heartbeat_timeout:
                    self._on_worker_lost(worker, f"no heartbeat for {self.heartbeat_timeout} s")
