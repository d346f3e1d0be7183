"""The state API: everything an operator must survive a failure with lives here.

* :class:`~flowsql.runtime.state.keyed_table.KeyedTableState` -- keyed Arrow rows stored
  per key group (rescaling reassigns key groups);
* :class:`~flowsql.runtime.state.list_state.OperatorListState` -- non-keyed rows,
  redistributed by ``split`` or ``union`` on rescale;
* :class:`~flowsql.runtime.state.store.StateStore` -- one operator's named states (and its
  event-time timers, ``flowsql.runtime.time.timers``), snapshotted as immutable Arrow tables
  with JSON metadata, never serialized Python objects.

Import ``StateStore`` from ``flowsql.runtime.state.store``: this package is imported by the
timer service, which the store itself depends on.
"""

from flowsql.runtime.state.keyed_table import KEY_GROUP, KeyedTableState
from flowsql.runtime.state.list_state import OperatorListState

__all__ = ["KEY_GROUP", "KeyedTableState", "OperatorListState"]
