"""One listening socket per process that routes incoming remote channels by id.

A process announces a single data port; every upstream subtask connects to it and names
its channel in a HELLO frame. Connections may arrive before the receiving task registered
its input channel (deployment order is not guaranteed), so they wait in ``pending`` until
``register`` claims them.
"""

from __future__ import annotations

import io
import socket
import threading

from flowsql.runtime.channels.base import ChannelError
from flowsql.runtime.channels.framing import Frame, read_frame
from flowsql.runtime.channels.remote import RemoteInputChannel

#: how long a fresh connection may take to say which channel it is
HELLO_TIMEOUT_S = 30.0


class ChannelServer:
    """Listens on ``host`` (an ephemeral port, see ``address``) until ``close``."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self._listener = socket.create_server((host, 0))
        self.address: tuple[str, int] = self._listener.getsockname()[:2]
        self._lock = threading.Lock()
        self._channels: dict[str, RemoteInputChannel] = {}
        self._pending: dict[str, tuple[socket.socket, io.BufferedIOBase]] = {}
        self._closed = False
        threading.Thread(target=self._accept, name="channel server", daemon=True).start()

    def register(self, channel: RemoteInputChannel) -> None:
        with self._lock:
            waiting = self._pending.pop(channel.name, None)
            if waiting is None:
                self._channels[channel.name] = channel
        if waiting is not None:
            channel.attach(*waiting)

    def unregister(self, name: str) -> None:
        with self._lock:
            self._channels.pop(name, None)
            waiting = self._pending.pop(name, None)
        if waiting is not None:
            waiting[0].close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            pending = list(self._pending.values())
            self._pending.clear()
        self._listener.close()
        for sock, _ in pending:
            sock.close()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self._listener.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handshake, args=(sock,), daemon=True).start()

    def _handshake(self, sock: socket.socket) -> None:
        try:
            sock.settimeout(HELLO_TIMEOUT_S)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            stream = sock.makefile("rb")
            frame = read_frame(stream)
            if frame is None or frame[0] is not Frame.HELLO:
                raise ChannelError("a connection did not start with HELLO")
            sock.settimeout(None)
            name = bytes(frame[1]).decode()
        except (OSError, ChannelError, UnicodeDecodeError):
            sock.close()
            return
        with self._lock:
            channel = self._channels.pop(name, None)
            if channel is None and not self._closed:
                self._pending[name] = (sock, stream)
        if channel is not None:
            channel.attach(sock, stream)
        elif self._closed:
            sock.close()
