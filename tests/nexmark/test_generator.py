"""The Nexmark generator: the event mix, ids, times, determinism, and the connector's
content at parallelism 1 and 2 equal to the generator's."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import flowsql
from flowsql.errors import FlowSQLError
from flowsql.nexmark.generate import generate_files
from flowsql.nexmark.generator import (
    KINDS,
    GeneratorConfig,
    NexmarkGenerator,
    kind_of,
)
from flowsql.nexmark.tables import connector_ddl

BASE = GeneratorConfig().base_time_ms


def _generate(config: GeneratorConfig, kind: str) -> pa.Table:
    assert config.events is not None
    return pa.Table.from_batches([NexmarkGenerator(config).generate(kind, 0, config.events)])


def test_one_person_three_auctions_46_bids_per_50_events() -> None:
    config = GeneratorConfig(events=5020)
    counts = {kind: _generate(config, kind).num_rows for kind in KINDS}
    # 100 full groups of 50, then 20 events: 1 person, 3 auctions, 16 bids
    assert counts == {"person": 101, "auction": 303, "bid": 4616}
    assert kind_of(np.arange(50)).tolist() == [0] + [1] * 3 + [2] * 46


def test_ids_follow_event_numbers() -> None:
    config = GeneratorConfig(events=500)
    assert _generate(config, "person").column("id").to_pylist() == list(range(1000, 1010))
    assert _generate(config, "auction").column("id").to_pylist() == list(range(1000, 1030))
    auctions = _generate(config, "auction")
    categories = set(auctions.column("category").to_pylist())
    assert categories <= set(range(10, 15))
    bids = _generate(config, "bid")
    # a bid is on an auction created at most AUCTION_ID_LEAD ahead of the latest one
    numbers = np.arange(500)
    latest_auction = {int(n): (int(n) // 50) * 3 + 2 + 1000 for n in numbers[numbers % 50 >= 4]}
    assert all(a <= latest + 10 for a, latest in
               zip(bids.column("auction").to_pylist(), latest_auction.values(), strict=True))
    assert all(r >= i for r, i in zip(auctions.column("reserve").to_pylist(),
                                      auctions.column("initialBid").to_pylist(), strict=True))


def test_hot_auctions_and_bidders_take_their_share() -> None:
    bids = _generate(GeneratorConfig(events=50_000), "bid")
    auction = np.asarray(bids.column("auction"))
    bidder = np.asarray(bids.column("bidder"))
    # hot ids are multiples of 100 (bidders: plus 1); others hit them about 1 in 100 times
    hot_auction_share = np.mean((auction - 1000) % 100 == 0)
    hot_bidder_share = np.mean((bidder - 1000) % 100 == 1)
    assert 0.45 < hot_auction_share < 0.56  # 1 - 1/2
    assert 0.70 < hot_bidder_share < 0.80  # 1 - 1/4


def test_event_time_from_the_rate() -> None:
    config = GeneratorConfig(events=1000, first_event_rate=100, next_event_rate=100)
    persons = _generate(config, "person")
    millis = persons.column("dateTime").cast(pa.int64()).to_pylist()
    assert millis == [BASE + n * 10 for n in range(0, 1000, 50)]  # 10 ms apart
    bids = _generate(config, "bid")
    assert bids.column("dateTime").cast(pa.int64())[0].as_py() == BASE + 4 * 10


def test_two_rates_alternate_every_half_period() -> None:
    config = GeneratorConfig(first_event_rate=10, next_event_rate=100, rate_period_s=2)
    # 1 s at 10 events/s (events 0-9), then 1 s at 100 events/s (events 10-109), repeat
    times = config.event_times_ms(np.array([0, 9, 10, 11, 109, 110, 120]))
    assert (times - BASE).tolist() == [0, 900, 1000, 1010, 1990, 2000, 3000]


def test_deterministic_for_a_seed_and_any_range_split() -> None:
    config = GeneratorConfig(events=3000, seed=7)
    generator = NexmarkGenerator(config)
    for kind in KINDS:
        whole = generator.generate(kind, 0, 3000)
        assert whole.equals(NexmarkGenerator(config).generate(kind, 0, 3000))
        parts = [generator.generate(kind, s, min(s + 777, 3000)) for s in range(0, 3000, 777)]
        assert pa.Table.from_batches(parts).equals(pa.Table.from_batches([whole]))
    other = NexmarkGenerator(GeneratorConfig(events=3000, seed=8)).generate("bid", 0, 3000)
    assert not other.equals(generator.generate("bid", 0, 3000))


@pytest.mark.parametrize("parallelism", [1, 2])
def test_connector_emits_the_generated_events_at_any_parallelism(parallelism: int) -> None:
    config = GeneratorConfig(events=3000, seed=3)
    session = flowsql.connect()
    session.sql("SET 'execution.runtime-mode' = 'streaming'")
    session.sql(f"SET 'parallelism.default' = '{parallelism}'")
    session.sql("SET 'execution.batch-size' = '256'")  # several chunks per subtask
    for ddl in connector_ddl(config):
        session.sql(ddl)
    for kind in KINDS:
        expected = _generate(config, kind)
        got = session.sql(f"SELECT * FROM {kind}").to_arrow()
        key = "id" if kind != "bid" else "dateTime"
        order = [(key, "ascending"), ("extra", "ascending")]
        assert got.sort_by(order).to_pylist() == expected.sort_by(order).to_pylist()


def test_gen_writes_the_connector_events(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import pyarrow.parquet as pq

    config = GeneratorConfig(events=2000)
    rows = generate_files(config, tmp_path)
    assert rows == {"person": 40, "auction": 120, "bid": 1840}
    for kind in KINDS:
        assert pq.read_table(tmp_path / kind).equals(_generate(config, kind))


def test_columns_must_be_the_kind_s() -> None:
    session = flowsql.connect()
    with pytest.raises(FlowSQLError, match="no column 'price'"):
        session.sql("CREATE TABLE p (id BIGINT, price BIGINT) WITH ("
                    "'connector' = 'nexmark', 'table' = 'person', 'events.num' = '10')")


def test_unbounded_table_streams_windows_and_refuses_batch_mode() -> None:
    session = flowsql.connect()
    session.sql("CREATE TABLE bid (auction BIGINT, `dateTime` TIMESTAMP(3), WATERMARK FOR "
                "`dateTime` AS `dateTime` - INTERVAL '4' SECOND) WITH ("
                "'connector' = 'nexmark', 'table' = 'bid')")
    with pytest.raises(FlowSQLError, match="'bid' is unbounded; set 'events.num'"):
        session.sql("SELECT count(*) FROM bid").to_arrow()
    session.sql("SET 'execution.runtime-mode' = 'streaming'")
    changes = session.sql("SELECT count(*) AS n, window_end FROM TABLE(TUMBLE(TABLE bid, "
                          "DESCRIPTOR(`dateTime`), INTERVAL '1' SECOND)) "
                          "GROUP BY window_start, window_end").stream()
    first = next(changes)
    changes.close()  # type: ignore[attr-defined]
    # 10,000 events per second of event time: the first second holds 9,200 bids
    assert first.to_pylist()[0]["n"] == 9200
