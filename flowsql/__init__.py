"""flowsql: SQL over a cost-based optimizer and a unified streaming runtime.

The public entry point is :func:`connect`, which returns a :class:`Session`.
"""

from flowsql.errors import FlowSQLError
from flowsql.planner.udf_spec import udaf, udf, udtf
from flowsql.session import Result, Session, connect

__all__ = ["FlowSQLError", "Result", "Session", "connect", "udaf", "udf", "udtf"]
__version__ = "0.1.0"
