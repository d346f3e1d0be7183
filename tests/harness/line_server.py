"""A TCP server in a thread for socket-source tests: each accepted connection is served by
its own thread running ``serve(number, connection, stop)`` (connections numbered from 1 in
the order they were accepted), so a restored source that connects again while the server
has not yet noticed the old connection's end is served at once."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

Serve = Callable[[int, socket.socket, threading.Event], None]


class LineServer:
    def __init__(self, serve: Serve) -> None:
        self.serve = serve
        self.stop = threading.Event()
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self._listener.settimeout(0.1)
        self.port = int(self._listener.getsockname()[1])
        self.accepted = 0
        self._threads: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> LineServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        self._thread.join()
        for thread in self._threads:
            thread.join(10)
        self._listener.close()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            thread = threading.Thread(target=self._run, args=(self.accepted, connection),
                                      daemon=True)
            self._threads.append(thread)
            thread.start()

    def _run(self, number: int, connection: socket.socket) -> None:
        with connection, contextlib.suppress(OSError):  # OSError: the client went away
            self.serve(number, connection, self.stop)


def send_then_hold(chunks: Iterable[bytes]) -> Serve:
    """Send ``chunks`` to the first connection, then keep it open until the server stops;
    later connections get nothing."""
    chunks = list(chunks)

    def serve(number: int, connection: socket.socket, stop: threading.Event) -> None:
        if number == 1:
            for chunk in chunks:
                connection.sendall(chunk)
        stop.wait()

    return serve
