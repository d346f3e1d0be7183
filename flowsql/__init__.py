"""flowsql: SQL over a cost-based optimizer and a unified streaming runtime.

The public entry point is :func:`connect`, which returns a :class:`Session`.
"""

from flowsql.errors import FlowSQLError
from flowsql.session import Result, Session, connect

__all__ = ["FlowSQLError", "Result", "Session", "connect"]
__version__ = "0.1.0"
