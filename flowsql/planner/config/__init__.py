"""Settings and connector options, each declared once; one parser per unit.

``settings`` declares every session setting, ``connectors`` every connector with its
options and formats, ``units`` parses durations and memory sizes, ``values`` turns a raw
string into a typed value, ``reference`` renders ``docs/configuration.md`` from it all.
"""

from flowsql.planner.config.connectors import (
    CONNECTORS,
    Connector,
    connector_of,
    find_connector,
    validate_table_options,
)
from flowsql.planner.config.settings import (
    SETTINGS,
    SettingValues,
    find_setting,
    resolve_setting,
    validate_setting,
)
from flowsql.planner.config.units import parse_duration_ms, parse_memory_size

__all__ = ["CONNECTORS", "SETTINGS", "Connector", "SettingValues", "connector_of",
           "find_connector", "find_setting", "parse_duration_ms", "parse_memory_size",
           "resolve_setting", "validate_setting", "validate_table_options"]
