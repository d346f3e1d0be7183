"""A TCP client connection to the server a socket table names, kept up by reconnecting.

Contract of :meth:`SocketConnection.receive`: it returns the bytes available now (up to
``max_bytes``; ``b""`` when none came within ``max_wait_s``), or a
:class:`ConnectionEnded` when the connection ended -- ``clean`` when the server closed it
(end of stream), not clean when it failed (reset, timeout). Bytes read before an end are
returned first; the end comes with the next call. The call after an end connects again.

A refused connection, or one that cannot be made again after an end, is retried every
``RETRY_INTERVAL_S`` (Flink's socket source waits 500 ms between retries); when none
succeeded within ``reconnect_timeout_s`` of the first failure, ``receive`` raises an
ExecutionError naming the server and the last error, which fails the job (and lets the
restart strategy decide). No call waits much longer than ``max_wait_s``, except a
connection attempt to a server that does not answer (at most ``CONNECT_TIMEOUT_S``).

What the server sent into a connection that ended but this client never read (bytes in
the operating system's buffers of a killed process, or in flight) is gone: no client can
get it back. The write-ahead log covers what was *received*.
"""

from __future__ import annotations

import select
import socket
import time
from dataclasses import dataclass

from flowsql.errors import ExecutionError

RETRY_INTERVAL_S = 0.5
CONNECT_TIMEOUT_S = 5.0
_RECEIVE_BYTES = 1 << 20


@dataclass(frozen=True)
class ConnectionEnded:
    """The connection ended: the server closed it (``clean``) or it failed."""

    clean: bool
    reason: str


class SocketConnection:
    """The connection to ``host:port`` (see the module contract)."""

    def __init__(self, host: str, port: int, reconnect_timeout_s: float) -> None:
        self.host = host
        self.port = port
        self.reconnect_timeout_s = reconnect_timeout_s
        self.address = f"{host}:{port}"
        self._socket: socket.socket | None = None
        self._ended: ConnectionEnded | None = None
        #: when the first failed attempt of the current outage happened (None: no outage)
        self._failing_since: float | None = None
        self._next_attempt = 0.0
        self._last_error = ""
        #: connections made so far
        self.connections = 0

    @property
    def connected(self) -> bool:
        return self._socket is not None

    def receive(self, max_wait_s: float, max_bytes: int) -> bytes | ConnectionEnded:
        if self._ended is not None:
            ended, self._ended = self._ended, None
            return ended
        if self._socket is None and not self._connect(max_wait_s):
            return b""
        assert self._socket is not None
        chunks: list[bytes] = []
        size = 0
        wait = max(max_wait_s, 0.0)
        while size < max_bytes:
            try:
                readable, _, _ = select.select([self._socket], [], [], wait)
                if not readable:
                    break
                chunk = self._socket.recv(min(_RECEIVE_BYTES, max_bytes - size))
            except BlockingIOError:
                break
            except OSError as error:
                self._end(ConnectionEnded(False, str(error) or type(error).__name__))
                break
            if not chunk:
                self._end(ConnectionEnded(True, "the server closed the connection"))
                break
            chunks.append(chunk)
            size += len(chunk)
            wait = 0.0  # take what is there now, do not wait for more
        if chunks:
            return b"".join(chunks)
        if self._ended is not None:
            ended, self._ended = self._ended, None
            return ended
        return b""

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def _end(self, ended: ConnectionEnded) -> None:
        self.close()
        self._ended = ended
        self._failing_since = time.monotonic()
        self._next_attempt = 0.0
        self._last_error = ended.reason

    def _connect(self, max_wait_s: float) -> bool:
        """One attempt when one is due; raises once the outage outlasted the timeout."""
        now = time.monotonic()
        if now < self._next_attempt:
            time.sleep(min(max(max_wait_s, 0.0), self._next_attempt - now))
            return False
        try:
            connection = socket.create_connection((self.host, self.port),
                                                  timeout=CONNECT_TIMEOUT_S)
        except OSError as error:
            self._last_error = str(error) or type(error).__name__
            if self._failing_since is None:
                self._failing_since = now
            waited = time.monotonic() - self._failing_since
            if waited >= self.reconnect_timeout_s:
                raise ExecutionError(
                    f"socket source {self.address}: no connection for {waited:.1f} s "
                    f"('reconnect-timeout' is {self.reconnect_timeout_s:g} s): "
                    f"{self._last_error}") from None
            self._next_attempt = now + RETRY_INTERVAL_S
            return False
        connection.setblocking(False)
        self._socket = connection
        self._failing_since = None
        self.connections += 1
        return True
