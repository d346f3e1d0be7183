"""Output buffering: batches are gathered into buffers before they cross a channel.

A buffer goes out when it holds ``buffer_rows`` rows or ``buffer_bytes`` bytes, when its
oldest batch has waited ``buffer_timeout_ms`` (a flusher thread, so a trickle of small
batches still arrives within the timeout), or just before a control event. Timeout 0 sends
every batch at once; -1 never sends a partial buffer on time alone. Events are never
delayed and never overtake data: ``emit`` flushes the pending buffer first. A batch larger
than a buffer is sent whole (operators already bound their batch size; splitting would only
add copies).

Sending happens under the writer's lock, so when the channel has no credit the flusher and
the task thread both wait — that waiting *is* back-pressure reaching the producing task. An
error the flusher meets (a broken channel) is raised by the next ``write``/``emit``.
"""

from __future__ import annotations

import threading
import time

import pyarrow as pa

from flowsql.runtime.channels.base import OutputChannel
from flowsql.runtime.channels.settings import ChannelSettings
from flowsql.runtime.events import ControlEvent, EndOfInput


class BufferedWriter:
    """Buffers batches for one output channel; ``finish`` ends the channel."""

    def __init__(self, channel: OutputChannel, settings: ChannelSettings) -> None:
        self.channel = channel
        self.settings = settings
        self.buffers_sent = 0
        self._pending: list[pa.RecordBatch] = []
        self._rows = 0
        self._bytes = 0
        self._oldest = 0.0
        self._cond = threading.Condition()
        self._error: Exception | None = None
        self._stopped = False
        self._finished = False
        if settings.buffer_timeout_ms > 0:
            threading.Thread(target=self._flush_on_time, name=f"flusher {channel.name}",
                             daemon=True).start()

    def write(self, batch: pa.RecordBatch) -> None:
        with self._cond:
            self._raise_flusher_error()
            if self._pending and not batch.schema.equals(self._pending[0].schema):
                self._flush_locked()
            if not self._pending:
                self._oldest = time.monotonic()
                self._cond.notify_all()
            self._pending.append(batch)
            self._rows += batch.num_rows
            self._bytes += batch.nbytes
            if (self.settings.buffer_timeout_ms == 0 or self._rows >= self.settings.buffer_rows
                    or self._bytes >= self.settings.buffer_bytes):
                self._flush_locked()

    def emit(self, event: ControlEvent) -> None:
        """Send ``event`` after everything written before it."""
        with self._cond:
            self._raise_flusher_error()
            self._flush_locked()
            self.channel.send(event)

    def flush(self) -> None:
        with self._cond:
            self._raise_flusher_error()
            self._flush_locked()

    def finish(self) -> None:
        """Flush, send EndOfInput, stop the flusher, close the channel; once (a task may
        end its outputs before it returns, the worker ends them again after)."""
        if self._finished:
            return
        self._finished = True
        self.emit(EndOfInput())
        self._stop()
        self.channel.close()

    def abort(self, reason: str) -> None:
        # the channel first: it wakes a send blocked on credits while holding the lock
        self.channel.abort(reason)
        self._stop()

    def _flush_locked(self) -> None:
        if not self._pending:
            return
        buffer = (self._pending[0] if len(self._pending) == 1
                  else pa.concat_batches(self._pending))
        self._pending, self._rows, self._bytes = [], 0, 0
        self.channel.send(buffer)
        self.buffers_sent += 1

    def _flush_on_time(self) -> None:
        timeout = self.settings.buffer_timeout_ms / 1000
        with self._cond:
            while not self._stopped:
                if not self._pending:
                    self._cond.wait()
                    continue
                remaining = self._oldest + timeout - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                try:
                    self._flush_locked()
                except Exception as exc:  # handed to the task thread by the next write
                    self._error = exc
                    return

    def _stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _raise_flusher_error(self) -> None:
        if self._error is not None:
            raise self._error
