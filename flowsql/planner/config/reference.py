"""``docs/configuration.md``, rendered from the declarations.

The committed page is compared with :func:`configuration_page` by a test, so it cannot
drift from the code; regenerate it with ``python -m flowsql.planner.config.reference
docs/configuration.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from flowsql.planner.config.connectors import (
    COLUMN_OPTION_PREFIX,
    CONNECTOR_OPTION,
    CONNECTORS,
    Connector,
)
from flowsql.planner.config.settings import PREFIX_FAMILIES, SETTINGS
from flowsql.planner.config.units import DURATION_EXAMPLES, SIZE_EXAMPLES
from flowsql.planner.config.values import Option


def configuration_page() -> str:
    """The Markdown text of the configuration page."""
    lines = [
        "# Configuration",
        "",
        "<!-- Generated from flowsql/planner/config by "
        "`python -m flowsql.planner.config.reference docs/configuration.md`; do not edit. -->",
        "",
        "Settings are changed with `SET 'key' = 'value'` (or `flowsql.connect(key=value)`, "
        "`flowsql --set key=value`); table options are the `WITH ('key' = 'value')` of "
        "`CREATE TABLE`. An unknown key or an invalid value is an error when it is set.",
        "",
        f"Durations are an integer and a unit ({DURATION_EXAMPLES}; also `d`); a bare "
        "number is milliseconds. Memory sizes are a number and a unit "
        f"({SIZE_EXAMPLES}; `kb` = `kib` = 1024 bytes); a bare number is bytes.",
        "",
        "## Settings",
        "",
        *_option_table(SETTINGS, aliases=True),
        "",
        "Key families passed through as they are:",
        "",
        *[f"- `{family.prefix}*`: {family.description}" for family in PREFIX_FAMILIES],
        "",
        "## Connectors",
        "",
        f"`'{CONNECTOR_OPTION.key}'` chooses the connector (default "
        f"`{CONNECTOR_OPTION.default}`).",
    ]
    for connector in CONNECTORS.values():
        lines += ["", *_connector_section(connector)]
    return "\n".join(lines) + "\n"


def _connector_section(connector: Connector) -> list[str]:
    roles = " and ".join(r for r, on in (("source", connector.source),
                                          ("sink", connector.sink)) if on)
    facts = [f"Role: {roles}."]
    if connector.source:
        facts.append(f"Source: {_boundedness(connector)}.")
    if connector.sink:
        facts.append(f"Sink input: {connector.changelog()}.")
    if connector.needs_columns:
        facts.append("The table needs a column list.")
    lines = [f"### {connector.name}", "", connector.description, "", " ".join(facts)]
    if connector.options:
        lines += ["", *_option_table(connector.options)]
    if connector.column_options:
        lines += ["", f"Per column (`{COLUMN_OPTION_PREFIX}<column>.<option>`):", "",
                  *_option_table(connector.column_options)]
    for prefix, description in connector.option_prefixes:
        lines += ["", f"Keys `{prefix}*`: {description}."]
    if connector.needs_primary_key:
        lines += ["", "The table needs `PRIMARY KEY (...) NOT ENFORCED`."]
    if connector.metadata:
        lines += ["", "Metadata columns (`name TYPE METADATA [FROM 'key'] [VIRTUAL]`):", "",
                  "| Key | Type | Written by the sink | Description |", "|---|---|---|---|",
                  *(f"| `{m.name}` | {m.sql_type} | {'yes' if m.writable else 'no (VIRTUAL)'}"
                    f" | {m.description} |" for m in connector.metadata)]
    if connector.key_value_formats:
        lines += ["", "Format options are written `<format>.<option>` for 'format', "
                  "`value.<format>.<option>` for 'value.format' and `key.<format>.<option>` "
                  "for 'key.format'."]
    for fmt in connector.formats:
        lines += ["", f"#### format {fmt.name}", "", fmt.description
                  + (" The column list may be omitted." if fmt.describes_columns else "")]
        if fmt.options:
            lines += ["", *_option_table(fmt.options)]
    return lines


def _boundedness(connector: Connector) -> str:
    if connector.updating_source:
        return "unbounded, a changelog"
    if connector.unbounded:
        return "unbounded"
    if connector.bounded_with is not None:
        return f"unbounded, bounded with '{connector.bounded_with}'"
    if connector.unbounded_with is not None:
        return f"bounded, unbounded with '{connector.unbounded_with}'"
    if connector.bounded_by_row_count:
        return "bounded when it has a row count, else unbounded"
    return "bounded"


def _option_table(options: tuple[Option, ...], aliases: bool = False) -> list[str]:
    header = "| Key | Type | Default | Description |"
    rule = "|---|---|---|---|"
    if aliases:
        header = "| Key | Type | Default | Aliases | Description |"
        rule = "|---|---|---|---|---|"
    rows = [header, rule]
    for option in options:
        kind = option.kind.name if not option.allowed else " \\| ".join(option.allowed)
        default = {None: "(none)", "": "(empty)"}.get(option.default, f"`{option.default}`")
        if option.required:
            default = "required"
        cells = [f"`{option.key}`", kind, default]
        if aliases:
            cells.append(", ".join(f"`{a}`" for a in option.aliases))
        cells.append(_description(option))
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _description(option: Option) -> str:
    bounds = []
    if option.minimum is not None:
        bounds.append(f"at least {option.minimum}")
    if option.maximum is not None:
        bounds.append(f"at most {option.maximum}")
    if option.maximum_per_core is not None:
        bounds.append(f"at most {option.maximum_per_core} x the CPU cores")
    text = option.description.replace("|", "\\|")
    return f"{text} Bounds: {', '.join(bounds)}." if bounds else text


if __name__ == "__main__":
    Path(sys.argv[1]).write_text(configuration_page(), encoding="utf-8")
