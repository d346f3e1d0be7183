"""The session layer: where sql, optimizer and runtime (or spark) meet.

``connect`` opens a :class:`Session`; ``Session.sql`` runs one statement and returns a
:class:`Result`. ``execute`` runs each kind of statement.
"""

from flowsql.session.result import Result
from flowsql.session.session import Session, connect

__all__ = ["Result", "Session", "connect"]
