"""Planning for streams: changelog modes, time attributes, streaming operators."""

from flowsql.optimizer.streaming.plan import StreamInfo, is_bounded_table, to_streaming

__all__ = ["StreamInfo", "is_bounded_table", "to_streaming"]
