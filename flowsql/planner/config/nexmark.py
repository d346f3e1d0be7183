"""The ``nexmark`` connector: the Nexmark benchmark's auction events, generated.

Options are those of the Flink Nexmark suite's connector where it has them
(``events.num``, ``first-event.rate``, ``next-event.rate``, ``rate.period``); the rest are
flowsql's: ``table`` chooses which of the three event kinds a table holds (the suite has one
``nexmark`` table of ROW columns with views; here each kind is its own table, declared with
the kind's columns and a WATERMARK), ``seed``, ``base-time`` and the hot ratios. What the
options mean is in ``flowsql.nexmark.generator``; the source is
``flowsql.runtime.connectors.nexmark``.
"""

from __future__ import annotations

from flowsql.planner.config.connector_model import Connector
from flowsql.planner.config.values import DURATION, INTEGER, STRING, Option

NEXMARK = Connector(
    "nexmark",
    "The Nexmark benchmark's persons, auctions and bids (1 : 3 : 46 per 50 events), "
    "deterministic for a seed and the same at any parallelism: bounded by 'events.num', "
    "else unbounded.",
    source=True, sink=False,
    options=(
        Option("table", STRING, None, "Which events the table holds.", required=True,
               allowed=("person", "auction", "bid")),
        Option("events.num", INTEGER, None,
               "Events of all kinds to generate (unset: unbounded). The table holds its "
               "kind's share of them.", minimum=1),
        Option("first-event.rate", INTEGER, "10000",
               "Events per second of event time at the start.", minimum=1),
        Option("next-event.rate", INTEGER, "10000",
               "The other rate: when it differs, the rate alternates between the two every "
               "half 'rate.period'.", minimum=1),
        Option("rate.period", DURATION, "10 min",
               "Period of the alternation between the two rates.", minimum=2000),
        Option("base-time", INTEGER, "1436918400000",
               "Time of the first event, epoch milliseconds (default 2015-07-15 UTC)."),
        Option("seed", INTEGER, "0", "Seed of the random choices."),
        Option("hot-auctions.ratio", INTEGER, "2",
               "A bid is on a hot auction except once in this many.", minimum=1),
        Option("hot-sellers.ratio", INTEGER, "4",
               "An auction is by a hot seller except once in this many.", minimum=1),
        Option("hot-bidders.ratio", INTEGER, "4",
               "A bid is by a hot bidder except once in this many.", minimum=1),
    ),
    bounded_by_row_count=True)
