"""A worker process: runs deployed tasks in threads, moves their data over channels.

Started by the coordinator as ``python -m flowsql.runtime.cluster.worker --coordinator
HOST:PORT --worker-id N``. It connects back, announces its data port (one ChannelServer
for all its tasks' inputs), sends heartbeats, and obeys deploy / cancel / shutdown; a
``job_message`` (checkpoint triggers and notices) goes to every task of that job here.

A worker must never outlive its coordinator: it exits at once when the control connection
closes (the coordinator's kernel closes it even on SIGKILL) and, as a second line, when its
parent process changes (re-parented after the parent died). It ignores SIGINT so a Ctrl-C
in the shell reaches the coordinator, which then shuts workers down in order. Exiting uses
``os._exit``: task threads are daemons blocked on sockets and must not delay it.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import signal
import socket
import threading
import time
import traceback
from typing import Any

from flowsql.runtime.channels import (
    BufferedWriter,
    ChannelError,
    ChannelServer,
    ChannelSettings,
    InputGate,
    RemoteInputChannel,
    RemoteOutputChannel,
)
from flowsql.runtime.cluster.protocol import Message, MessageWriter, read_message
from flowsql.runtime.cluster.tasks import TaskContext, resolve_task_kind


class _RunningTask:
    """A task's cancel flag and channels, so cancel can break every blocking call."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()
        self.commands: queue.SimpleQueue[dict[str, Any]] = queue.SimpleQueue()
        self.inputs: list[RemoteInputChannel] = []
        self.outputs: list[BufferedWriter] = []
        self.lock = threading.Lock()

    def cancel(self, reason: str) -> None:
        self.cancelled.set()
        self.abort(reason)

    def abort(self, reason: str) -> None:
        with self.lock:
            channels: list[RemoteInputChannel | BufferedWriter] = [*self.inputs, *self.outputs]
        for channel in channels:
            channel.abort(reason)


class Worker:
    def __init__(self, worker_id: int, control: socket.socket, heartbeat_s: float) -> None:
        self.worker_id = worker_id
        self.control = MessageWriter(control)
        self.stream = control.makefile("rb")
        self.heartbeat_s = heartbeat_s
        self.server = ChannelServer()
        self.jobs: dict[str, list[_RunningTask]] = {}
        self.lock = threading.Lock()

    def serve(self) -> None:
        host, port = self.server.address
        self._send({"type": "hello", "worker": self.worker_id, "pid": os.getpid(),
                    "data_host": host, "data_port": port})
        threading.Thread(target=self._heartbeat, name="heartbeat", daemon=True).start()
        while (message := read_message(self.stream)) is not None:
            kind = message["type"]
            if kind == "deploy":
                self._deploy(message["task"])
            elif kind == "cancel":
                self._cancel(message["job"])
            elif kind == "job_message":
                self._deliver(message["job"], message["message"])
            elif kind == "shutdown":
                break
        for job in list(self.jobs):
            self._cancel(job)
        self.server.close()

    def _deploy(self, descriptor: dict[str, Any]) -> None:
        running = _RunningTask()
        with self.lock:
            self.jobs.setdefault(descriptor["job"], []).append(running)
        threading.Thread(target=self._run, args=(descriptor, running),
                         name=f"task {descriptor['name']}[{descriptor['subtask']}]",
                         daemon=True).start()

    def _deliver(self, job: str, message: dict[str, Any]) -> None:
        """A coordinator message for every task of ``job`` on this worker, in order."""
        with self.lock:
            tasks = list(self.jobs.get(job, []))
        for running in tasks:
            running.commands.put(message)

    def _cancel(self, job: str) -> None:
        with self.lock:
            tasks = self.jobs.pop(job, [])
        for running in tasks:
            running.cancel("the job was cancelled")

    def _run(self, descriptor: dict[str, Any], running: _RunningTask) -> None:
        task_id = f"{descriptor['name']}[{descriptor['subtask']}]"
        header = {"job": descriptor["job"], "task": task_id}
        try:
            settings = ChannelSettings.from_settings(descriptor["settings"])
            function = resolve_task_kind(descriptor["kind"])
            for name in descriptor["inputs"]:
                channel = RemoteInputChannel(name, settings.credits)
                with running.lock:
                    running.inputs.append(channel)
                self.server.register(channel)
            for output in descriptor["outputs"]:
                writer = BufferedWriter(
                    RemoteOutputChannel(output["channel"], (output["host"], output["port"])),
                    settings)
                with running.lock:
                    running.outputs.append(writer)
            if running.cancelled.is_set():
                raise ChannelError("the job was cancelled")
            context = TaskContext(job=descriptor["job"], name=descriptor["name"],
                                  subtask=descriptor["subtask"], config=descriptor["config"],
                                  settings=descriptor["settings"],
                                  inputs=InputGate(running.inputs), outputs=running.outputs,
                                  cancelled=running.cancelled,
                                  report=lambda progress: self._send(
                                      {"type": "task_progress", **header,
                                       "progress": progress}),
                                  commands=running.commands,
                                  send=lambda message: self._send(
                                      {"type": "task_message", **header,
                                       "message": message}))
            result = dict(function(context) or {})
            if running.cancelled.is_set():
                raise ChannelError("the job was cancelled")
            for writer in running.outputs:
                writer.finish()
            json.dumps(result)  # a result that is not JSON fails the task, not the worker
            self._send({"type": "task_finished", **header, "result": result})
        except Exception as exc:
            running.abort(f"task {task_id} failed")
            if running.cancelled.is_set():
                self._send({"type": "task_cancelled", **header})
            else:
                self._send({"type": "task_failed", **header,
                            "error": f"{type(exc).__name__}: {exc}",
                            "traceback": traceback.format_exc(),
                            "channel_error": isinstance(exc, ChannelError)})
        finally:
            for channel in running.inputs:
                self.server.unregister(channel.name)
                # a task that returned before reading an input to its end must not leave
                # that input's sender blocked on credits forever: break the channel instead
                channel.abort(f"the consuming task {task_id} ended")
            with self.lock:
                siblings = self.jobs.get(descriptor["job"], [])
                if running in siblings:
                    siblings.remove(running)
                if not siblings:
                    self.jobs.pop(descriptor["job"], None)

    def _heartbeat(self) -> None:
        parent = os.getppid()
        while True:
            time.sleep(self.heartbeat_s)
            if os.getppid() != parent:
                os._exit(3)  # the coordinator died without closing the connection
            self._send({"type": "heartbeat"})

    def _send(self, message: Message) -> None:
        try:
            self.control.send(message)
        except OSError:
            os._exit(2)  # the coordinator is gone: nobody to work for


def _share_cores(threads: str | None) -> None:
    """Arrow's thread pools default to every core; N workers on one machine would then run
    N x cores threads. The coordinator says how many each worker should use."""
    if threads:
        import pyarrow as pa

        pa.set_cpu_count(max(1, int(threads)))


def main() -> None:
    parser = argparse.ArgumentParser(description="flowsql mini-cluster worker")
    parser.add_argument("--coordinator", required=True, help="HOST:PORT of the coordinator")
    parser.add_argument("--worker-id", type=int, required=True)
    parser.add_argument("--heartbeat", type=float, default=0.5, help="seconds between beats")
    args = parser.parse_args()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _share_cores(os.environ.get("FLOWSQL_WORKER_THREADS"))
    host, _, port = args.coordinator.rpartition(":")
    try:
        control = socket.create_connection((host, int(port)), timeout=30)
    except OSError:
        os._exit(1)
    control.settimeout(None)
    control.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        Worker(args.worker_id, control, args.heartbeat).serve()
    except Exception:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


if __name__ == "__main__":
    main()
