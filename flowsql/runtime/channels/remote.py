"""A channel between processes: Arrow IPC frames over one TCP connection, with credits.

The receiver grants ``capacity`` credits when the connection is routed to it and one more
each time its consumer takes an element out of the inbox; the sender spends one credit per
element and waits when it has none. So at most ``capacity`` elements are ever in flight or
queued per channel, whatever the speed difference between the two tasks.

Closing is a handshake: the sender sends ``EndOfInput`` and half-closes; the receiver
hangs up after reading ``EndOfInput``; the sender waits for that hang-up before closing its
socket. Closing outright could reset the connection while credit frames sit unread and
destroy the last data frames in flight. A connection that ends before ``EndOfInput`` breaks
the channel (``ChannelError``): the peer died or was cancelled.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
from collections.abc import Callable

import pyarrow as pa

from flowsql.runtime.channels.base import ChannelError, Element
from flowsql.runtime.channels.framing import (
    ElementDecoder,
    ElementEncoder,
    Frame,
    FrameWriter,
    read_credit,
    read_frame,
)
from flowsql.runtime.channels.inbox import Inbox
from flowsql.runtime.events import EndOfInput

#: how long ``close`` waits for the receiver to confirm it read everything
CLOSE_TIMEOUT_S = 30.0


class RemoteOutputChannel:
    """The sending end; connects to the ChannelServer at ``address`` that owns channel ``name``.

    ``blocked_sends`` counts the sends that had to wait for a credit: evidence of back-pressure.
    """

    def __init__(self, name: str, address: tuple[str, int], connect_timeout: float = 30.0
                 ) -> None:
        self.name = name
        self.blocked_sends = 0
        try:
            self._sock = socket.create_connection(address, timeout=connect_timeout)
        except OSError as exc:
            raise ChannelError(f"channel {name}: cannot connect to {address[0]}:{address[1]} "
                               f"({exc})") from exc
        self._sock.settimeout(None)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._frames = FrameWriter(self._sock)
        self._encoder = ElementEncoder(self._frames)
        self._credits = 0
        self._broken: str | None = None
        self._cond = threading.Condition()
        self._peer_closed = threading.Event()
        self._frames.write(Frame.HELLO, name.encode())
        threading.Thread(target=self._read_credits, name=f"credits {name}", daemon=True).start()

    def send(self, element: Element) -> None:
        with self._cond:
            if self._credits == 0:
                self.blocked_sends += 1
            while self._credits == 0 and self._broken is None:
                self._cond.wait()
            if self._broken is not None:
                raise ChannelError(f"channel {self.name} broke: {self._broken}")
            self._credits -= 1
        try:
            self._encoder.write(element)
        except OSError as exc:
            self._fail(f"sending failed ({exc})")
            raise ChannelError(f"channel {self.name} broke: sending failed ({exc})") from exc

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_WR)
        self._peer_closed.wait(CLOSE_TIMEOUT_S)
        self._sock.close()

    def abort(self, reason: str) -> None:
        self._fail(reason)
        with contextlib.suppress(OSError):
            self._sock.shutdown(socket.SHUT_RDWR)
        self._sock.close()

    def _read_credits(self) -> None:
        stream = self._sock.makefile("rb")
        try:
            while (frame := read_frame(stream)) is not None:
                kind, payload = frame
                if kind is not Frame.CREDIT:
                    raise ChannelError(f"unexpected {kind.name} frame from the receiver")
                with self._cond:
                    self._credits += read_credit(payload)
                    self._cond.notify_all()
            self._fail("the receiver closed the connection")
        except (OSError, ValueError, ChannelError) as exc:
            self._fail(f"the connection to the receiver failed ({exc})")
        finally:
            self._peer_closed.set()

    def _fail(self, reason: str) -> None:
        with self._cond:
            if self._broken is None:
                self._broken = reason
            self._cond.notify_all()


class RemoteInputChannel:
    """The receiving end; a ChannelServer attaches the sender's connection to it."""

    def __init__(self, name: str, capacity: int) -> None:
        self.name = name
        self.inbox = Inbox(name, capacity)
        self._frames: FrameWriter | None = None
        self._sock: socket.socket | None = None
        self._reading = False

    def attach(self, sock: socket.socket, stream: io.BufferedIOBase) -> None:
        """Take over a connection whose HELLO named this channel; grant the initial credits."""
        self._sock = sock
        self._frames = FrameWriter(sock)
        self._reading = True
        threading.Thread(target=self._read, args=(sock, stream), name=f"receive {self.name}",
                         daemon=True).start()
        self._grant(self.inbox.capacity)

    def poll(self) -> Element | None:
        element = self.inbox.poll()
        if element is not None and self._reading:
            self._grant(1)
        return element

    def set_listener(self, listener: Callable[[], None]) -> None:
        self.inbox.set_listener(listener)

    def abort(self, reason: str) -> None:
        self.inbox.fail(reason)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def _grant(self, credits: int) -> None:
        assert self._frames is not None
        # on a dead connection the reader thread reports the failure; credits no longer matter
        with contextlib.suppress(OSError):
            self._frames.write_credit(credits)

    def _read(self, sock: socket.socket, stream: io.BufferedIOBase) -> None:
        decoder = ElementDecoder(self.name)
        try:
            while True:
                frame = read_frame(stream)
                if frame is None:
                    raise ChannelError("the sender disconnected before end of input")
                element = decoder.decode(*frame)
                if element is None:
                    continue
                if isinstance(element, EndOfInput):
                    self._reading = False
                self.inbox.put(element, block=False)
                if isinstance(element, EndOfInput):
                    return
        except (OSError, ChannelError, pa.ArrowException) as exc:
            self.inbox.fail(str(exc))
        finally:
            self._reading = False
            sock.close()
