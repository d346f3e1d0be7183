"""docs/configuration.md is generated from the declarations and must not drift from them."""

from __future__ import annotations

from pathlib import Path

from flowsql.planner.config.connectors import CONNECTORS
from flowsql.planner.config.reference import configuration_page
from flowsql.planner.config.settings import SETTINGS

PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_committed_page_equals_the_generated_one() -> None:
    assert PAGE.read_text(encoding="utf-8") == configuration_page(), (
        "docs/configuration.md is stale: python -m flowsql.planner.config.reference "
        "docs/configuration.md")


def test_page_lists_every_setting_alias_connector_and_option() -> None:
    page = configuration_page()
    for option in SETTINGS:
        assert f"| `{option.key}` |" in page
        assert all(f"`{alias}`" in page for alias in option.aliases)
    for connector in CONNECTORS.values():
        assert f"### {connector.name}\n" in page
        for option in (*connector.options, *connector.column_options,
                       *(o for f in connector.formats for o in f.options)):
            assert f"| `{option.key}` |" in page
