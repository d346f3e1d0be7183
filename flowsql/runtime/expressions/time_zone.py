"""Instants (TIMESTAMP_LTZ, Arrow ``tz='UTC'``) to wall-clock TIMESTAMPs and back in a zone
the binder wrote into the call as a constant string (``sql.bind_time_zone``).

Both directions are vectorized Arrow kernels. Back from wall-clock time follows Java's
``LocalDateTime.atZone`` (Flink's rule): a repeated time (the autumn change) is its earlier
instant, a skipped time (the spring change) is moved forward by the length of the gap.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from flowsql.errors import ExecutionError
from flowsql.planner.expressions import Call
from flowsql.runtime.expressions.registry import Datum, Node, Run, register
from flowsql.runtime.expressions.support import as_array


def constant_zone(call: Call, node: Node) -> str:
    """The zone argument's text: the binder always writes a non-NULL string literal."""
    if not node.constant or not isinstance(node.python_value, str):
        raise ExecutionError(f"{call.name} needs a constant time zone")
    return str(node.python_value)


def local_of_instants(instants: pa.Array, zone: str) -> pa.Array:
    """The wall-clock timestamps (no zone, same unit) ``zone`` shows at ``instants``."""
    return pc.local_timestamp(instants.cast(pa.timestamp(instants.type.unit, zone)))


def instants_of_local(local: pa.Array, zone: str) -> pa.Array:
    """The instants (``tz='UTC'``) at which ``zone``'s clock shows ``local``."""
    unit = local.type.unit
    earliest = pc.assume_timezone(local, timezone=zone, ambiguous="earliest",
                                  nonexistent="earliest")
    # Inside a gap 'earliest' is the last instant before it; adding what its wall-clock time
    # lacks to reach the asked one moves the time forward by the gap (zero elsewhere).
    shown = pc.local_timestamp(earliest)
    lacking = pc.subtract(local.cast(pa.int64()), shown.cast(pa.int64()))
    instant = pc.add(earliest.cast(pa.timestamp(unit, "UTC")).cast(pa.int64()), lacking)
    return instant.cast(pa.timestamp(unit, "UTC"))


@register("ltz_to_local")
def _ltz_to_local(call: Call, args: list[Node]) -> Run:
    value, zone = args[0], constant_zone(call, args[1])

    def run(batch: pa.RecordBatch) -> Datum:
        return local_of_instants(as_array(value.run(batch), batch.num_rows), zone)
    return run


@register("local_to_ltz")
def _local_to_ltz(call: Call, args: list[Node]) -> Run:
    value, zone = args[0], constant_zone(call, args[1])

    def run(batch: pa.RecordBatch) -> Datum:
        return instants_of_local(as_array(value.run(batch), batch.num_rows), zone)
    return run
