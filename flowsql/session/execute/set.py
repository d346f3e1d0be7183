"""SET and RESET: change, restore or list the session's settings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from flowsql.planner.config.settings import resolve_setting
from flowsql.session.result import Result
from flowsql.sql.statement_parser import SetStatement

if TYPE_CHECKING:
    from flowsql.session.session import Session

__all__ = ["execute_set"]


def execute_set(session: Session, statement: SetStatement) -> Result:
    """``SET 'key' = 'value'``, ``SET`` (list every setting), ``RESET ['key']``."""
    from flowsql.session.session import DEFAULT_SETTINGS

    if statement.reset:
        key = None if statement.key is None else resolve_setting(statement.key)
        if key is None:
            session.settings = dict(DEFAULT_SETTINGS)
        elif key in DEFAULT_SETTINGS:
            session.settings[key] = DEFAULT_SETTINGS[key]
        else:
            session.settings.pop(key, None)
        return Result("set", message="reset")
    if statement.key is None:
        keys = sorted(session.settings)
        return Result("show", table=pa.table({
            "key": pa.array(keys, pa.string()),
            "value": pa.array([session.settings[k] for k in keys], pa.string())}))
    assert statement.value is not None
    session.set(statement.key, statement.value)
    return Result("set", message=f"{statement.key} = {statement.value}")
