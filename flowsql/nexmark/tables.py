"""The DDL of the three Nexmark tables, over the ``nexmark`` connector or over files
written by ``flowsql nexmark gen``.

Each table has its kind's columns in the Flink suite's names and types, ``dateTime`` as its
event time with a WATERMARK 4 seconds behind (the suite's delay). The column lists are
``flowsql.nexmark.generator.SCHEMAS`` written as SQL.
"""

from __future__ import annotations

import pyarrow as pa

from flowsql.nexmark.generator import KINDS, SCHEMAS, GeneratorConfig

WATERMARK_DELAY = "INTERVAL '4' SECOND"


def _sql_type(t: pa.DataType) -> str:
    if pa.types.is_int64(t):
        return "BIGINT"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP(3)"
    return "VARCHAR"


def _columns(kind: str) -> str:
    return ",\n  ".join(f"`{f.name}` {_sql_type(f.type)}" for f in SCHEMAS[kind])


def _with(options: dict[str, str]) -> str:
    return ", ".join(f"'{k}' = '{v}'" for k, v in options.items())


def generator_options(config: GeneratorConfig) -> dict[str, str]:
    """The connector options of ``config``."""
    options = {
        "first-event.rate": str(config.first_event_rate),
        "next-event.rate": str(config.next_event_rate),
        "rate.period": f"{config.rate_period_s} s",
        "base-time": str(config.base_time_ms),
        "seed": str(config.seed),
        "hot-auctions.ratio": str(config.hot_auction_ratio),
        "hot-sellers.ratio": str(config.hot_seller_ratio),
        "hot-bidders.ratio": str(config.hot_bidder_ratio),
    }
    if config.events is not None:
        options["events.num"] = str(config.events)
    return options


def connector_ddl(config: GeneratorConfig) -> list[str]:
    """CREATE TABLE person/auction/bid over the ``nexmark`` connector."""
    options = generator_options(config)
    return [f"CREATE TABLE {kind} (\n  {_columns(kind)},\n"
            f"  WATERMARK FOR `dateTime` AS `dateTime` - {WATERMARK_DELAY}\n"
            f") WITH ('connector' = 'nexmark', 'table' = '{kind}', {_with(options)})"
            for kind in KINDS]


def file_ddl(directory: str, fmt: str = "parquet") -> list[str]:
    """CREATE TABLE person/auction/bid over the files ``flowsql nexmark gen`` wrote."""
    return [f"CREATE TABLE {kind} (\n  {_columns(kind)},\n"
            f"  WATERMARK FOR `dateTime` AS `dateTime` - {WATERMARK_DELAY}\n"
            f") WITH ('connector' = 'filesystem', 'path' = '{directory}/{kind}', "
            f"'format' = '{fmt}')"
            for kind in KINDS]
