"""The control protocol between the coordinator and its workers: JSON messages on a socket.

Each message is a little-endian uint32 length followed by that many bytes of UTF-8 JSON
holding an object with a ``type``. JSON keeps the protocol inspectable and language-neutral
and, unlike serialized Python objects, can never execute code on the receiving side. Messages:

coordinator -> worker: ``deploy`` {task: deployment descriptor}, ``cancel`` {job},
``shutdown``.
worker -> coordinator: ``hello`` {worker, pid, data_host, data_port}, ``heartbeat``,
``task_finished`` {job, task, result}, ``task_failed`` {job, task, error, traceback,
channel_error}, ``task_cancelled`` {job, task}.

Data never travels here: batches go over channels, worker to worker.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from typing import Any, BinaryIO

from flowsql.errors import ExecutionError

_LENGTH = struct.Struct("<I")

Message = dict[str, Any]


class MessageWriter:
    """Sends whole messages; a lock keeps messages of concurrent threads apart."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()

    def send(self, message: Message) -> None:
        """Raises OSError when the peer is gone (callers decide whether that matters)."""
        data = json.dumps(message, separators=(",", ":")).encode()
        with self._lock:
            self._sock.sendall(_LENGTH.pack(len(data)) + data)


def read_message(stream: BinaryIO) -> Message | None:
    """The next message, or None when the peer closed the connection (or it broke)."""
    try:
        header = stream.read(_LENGTH.size)
        if len(header) < _LENGTH.size:
            return None
        (size,) = _LENGTH.unpack(header)
        data = stream.read(size)
    except OSError:
        return None
    if len(data) < size:
        return None
    message = json.loads(data)
    if not isinstance(message, dict) or "type" not in message:
        raise ExecutionError(f"malformed control message: {data[:100]!r}")
    return message
