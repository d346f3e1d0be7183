"""Channels: FIFO transport of record batches and control events between subtasks.

``base`` states the contract (FIFO, credits, breaking); ``local`` hands elements over in
process, ``remote`` + ``framing`` + ``server`` carry them as Arrow IPC over TCP; ``buffering``
gathers batches into buffers (size / timeout: the throughput-latency knob) and ``gate`` lets
one thread read many channels and block some of them (barrier alignment).
"""

from flowsql.runtime.channels.base import ChannelError, Element, InputChannel, OutputChannel
from flowsql.runtime.channels.buffering import BufferedWriter
from flowsql.runtime.channels.gate import InputGate
from flowsql.runtime.channels.local import LocalChannel
from flowsql.runtime.channels.remote import RemoteInputChannel, RemoteOutputChannel
from flowsql.runtime.channels.server import ChannelServer
from flowsql.runtime.channels.settings import ChannelSettings

__all__ = ["BufferedWriter", "ChannelError", "ChannelServer", "ChannelSettings", "Element",
           "InputChannel", "InputGate", "LocalChannel", "OutputChannel", "RemoteInputChannel",
           "RemoteOutputChannel"]
