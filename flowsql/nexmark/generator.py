"""The Nexmark event generator: an online auction's persons, auctions and bids.

The model is the published Nexmark one (as in Apache Beam's and the Flink suite's
generators), restated here:

- Events are numbered ``0 .. N-1``. Of every 50 consecutive event numbers the first is a
  person, the next 3 are auctions and the last 46 are bids (``n % 50``), so the kind, the
  id and the time of an event depend only on its number.
- Ids follow from event numbers: person ``n`` of the sequence gets id ``1000 + n``, auction
  ``n`` gets ``1000 + n``; categories are ``10 .. 14``.
- An auction's seller is, with probability ``1 - 1/hot-sellers.ratio``, a *hot* seller (the
  latest person id rounded down to a multiple of 100), else a recent person (one of the
  last 1000, or up to 10 ahead). A bid's auction is hot with probability
  ``1 - 1/hot-auctions.ratio`` (the latest auction rounded down to a multiple of 100),
  else one of the last 100 auctions (or up to 10 ahead); its bidder is hot with
  probability ``1 - 1/hot-bidders.ratio`` (latest person rounded to 100, plus 1).
- Event time: ``base-time`` + the event's offset, events spaced by ``1/first-event.rate``
  seconds; when ``next-event.rate`` differs, the rate alternates between the two every
  half ``rate.period`` (a square wave).
- Random choices (prices, names, cities, ...) are a pure function of (seed, event number,
  field): a counter-based hash, not a stateful generator. Any range of event numbers is
  therefore generated alone, in one vectorized step, with the content it has in the whole
  sequence: a parallel source where each subtask generates a disjoint range of event
  numbers emits exactly what one subtask would.

The values are not bit-for-bit those of Beam's or Flink's generators (they draw from Java's
``Random``); the distributions and id structure are the model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from flowsql.runtime.partitioning import fmix64

PERSON_PROPORTION, AUCTION_PROPORTION, BID_PROPORTION = 1, 3, 46
TOTAL_PROPORTION = PERSON_PROPORTION + AUCTION_PROPORTION + BID_PROPORTION
FIRST_PERSON_ID = 1000
FIRST_AUCTION_ID = 1000
FIRST_CATEGORY_ID = 10
NUM_CATEGORIES = 5
#: hot ids are the latest id rounded down to a multiple of this
HOT_ID_GRANULE = 100
#: a non-hot seller or bidder is one of the latest this many persons ...
NUM_ACTIVE_PEOPLE = 1000
#: ... or up to this many ahead (a person not yet created)
PERSON_ID_LEAD = 10
NUM_IN_FLIGHT_AUCTIONS = 100
AUCTION_ID_LEAD = 10

KINDS = ("person", "auction", "bid")

PERSON_SCHEMA = pa.schema([
    ("id", pa.int64()), ("name", pa.string()), ("emailAddress", pa.string()),
    ("creditCard", pa.string()), ("city", pa.string()), ("state", pa.string()),
    ("dateTime", pa.timestamp("ms")), ("extra", pa.string())])
AUCTION_SCHEMA = pa.schema([
    ("id", pa.int64()), ("itemName", pa.string()), ("description", pa.string()),
    ("initialBid", pa.int64()), ("reserve", pa.int64()), ("dateTime", pa.timestamp("ms")),
    ("expires", pa.timestamp("ms")), ("seller", pa.int64()), ("category", pa.int64()),
    ("extra", pa.string())])
BID_SCHEMA = pa.schema([
    ("auction", pa.int64()), ("bidder", pa.int64()), ("price", pa.int64()),
    ("channel", pa.string()), ("url", pa.string()), ("dateTime", pa.timestamp("ms")),
    ("extra", pa.string())])
SCHEMAS = {"person": PERSON_SCHEMA, "auction": AUCTION_SCHEMA, "bid": BID_SCHEMA}

_FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah",
                "Deiter", "Walter")
_LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith",
               "Jones", "Noris")
_US_STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
_US_CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend",
              "Redmond", "Seattle", "Kent", "Cheyenne")
_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
_HEX = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
#: the two hex digits of every byte value
_HEX_PAIRS = np.stack([_HEX[np.arange(256) >> 4], _HEX[np.arange(256) & 15]], axis=1)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: lengths of the ``extra`` padding, so events have roughly the model's average sizes
_EXTRA_LENGTH = {"person": 64, "auction": 128, "bid": 32}


@dataclass(frozen=True)
class GeneratorConfig:
    """What the event sequence depends on. Rates are events per second of event time;
    ``base_time_ms`` is the first event's time (epoch milliseconds); the hot ratios are
    the ``1/ratio`` chances of a *non*-hot choice."""

    events: int | None = None
    first_event_rate: int = 10_000
    next_event_rate: int = 10_000
    rate_period_s: int = 600
    base_time_ms: int = 1_436_918_400_000  # 2015-07-15 00:00:00 UTC
    hot_auction_ratio: int = 2
    hot_seller_ratio: int = 4
    hot_bidder_ratio: int = 4
    seed: int = 0

    def event_times_ms(self, numbers: np.ndarray) -> np.ndarray:
        """Event time (epoch ms) of each event number."""
        n = numbers.astype(np.int64)
        if self.first_event_rate == self.next_event_rate:
            return self.base_time_ms + (n * 1000) // self.first_event_rate
        half_us = self.rate_period_s * 500_000  # half a period, microseconds
        first = self.first_event_rate * self.rate_period_s // 2
        second = self.next_event_rate * self.rate_period_s // 2
        cycle, k = np.divmod(n, first + second)
        in_first = k < first
        offset_us = np.where(in_first, k * 1_000_000 // self.first_event_rate,
                             half_us + (k - first) * 1_000_000 // self.next_event_rate)
        return self.base_time_ms + (cycle * 2 * half_us + offset_us) // 1000


def kind_of(numbers: np.ndarray) -> np.ndarray:
    """0 (person), 1 (auction) or 2 (bid) per event number."""
    offset = numbers % TOTAL_PROPORTION
    return (offset >= PERSON_PROPORTION).astype(np.int8) + (
        offset >= PERSON_PROPORTION + AUCTION_PROPORTION).astype(np.int8)


def event_numbers(kind: str, start: int, stop: int) -> np.ndarray:
    """The event numbers in ``[start, stop)`` that are events of ``kind``."""
    numbers = np.arange(start, stop, dtype=np.int64)
    return numbers[kind_of(numbers) == KINDS.index(kind)]


def last_person_base0(numbers: np.ndarray) -> np.ndarray:
    """The 0-based id of the latest person created at or before each event."""
    epoch, offset = np.divmod(numbers, TOTAL_PROPORTION)
    return epoch * PERSON_PROPORTION + np.minimum(offset, PERSON_PROPORTION - 1)


def last_auction_base0(numbers: np.ndarray) -> np.ndarray:
    """The 0-based id of the latest auction created at or before each event (-1: none)."""
    epoch, offset = np.divmod(numbers, TOTAL_PROPORTION)
    before = offset < PERSON_PROPORTION
    epoch = np.where(before, epoch - 1, epoch)
    offset = np.where(before | (offset >= PERSON_PROPORTION + AUCTION_PROPORTION),
                      AUCTION_PROPORTION - 1, offset - PERSON_PROPORTION)
    return epoch * AUCTION_PROPORTION + offset


class NexmarkGenerator:
    """Generates the events of ``config``'s sequence, by kind and event-number range."""

    def __init__(self, config: GeneratorConfig) -> None:
        self.config = config
        self._seed = np.uint64(config.seed % 2**64)

    def generate(self, kind: str, start: int, stop: int) -> pa.RecordBatch:
        """The events of ``kind`` among event numbers ``[start, stop)``, in number order,
        as a batch of ``SCHEMAS[kind]``."""
        numbers = event_numbers(kind, start, stop)
        if kind == "person":
            return self._persons(numbers)
        if kind == "auction":
            return self._auctions(numbers)
        return self._bids(numbers)

    # -- random draws: pure functions of (seed, event number, draw) ------------------------

    def _bits(self, numbers: np.ndarray, draw: int) -> np.ndarray:
        salt = fmix64(np.array([draw + 1], dtype=np.uint64) * _GOLDEN)[0] ^ self._seed
        return fmix64(fmix64(numbers.astype(np.uint64) * _GOLDEN + salt) ^ salt)

    def _below(self, numbers: np.ndarray, draw: int, bound: np.ndarray | int) -> np.ndarray:
        """A uniform integer in ``[0, bound)`` per event."""
        return (self._bits(numbers, draw) % np.asarray(bound, dtype=np.uint64)).astype(np.int64)

    def _unit(self, numbers: np.ndarray, draw: int) -> np.ndarray:
        return (self._bits(numbers, draw) >> np.uint64(11)).astype(np.float64) * 2.0**-53

    def _price(self, numbers: np.ndarray, draw: int) -> np.ndarray:
        """Prices spread over six orders of magnitude (cents): ``round(10^(6u) * 100)``."""
        return np.round(np.power(10.0, self._unit(numbers, draw) * 6.0) * 100.0).astype(
            np.int64)

    def _pick(self, numbers: np.ndarray, draw: int, words: tuple[str, ...]) -> pa.Array:
        return pa.array(list(words)).take(pa.array(self._below(numbers, draw, len(words))))

    def _hex(self, numbers: np.ndarray, draw: int, length: int) -> pa.Array:
        """Random lower-case hex strings of ``length`` characters."""
        words = -(-length // 16)
        cells = (numbers.astype(np.uint64)[:, None] * np.uint64(words)
                 + np.arange(words, dtype=np.uint64)[None, :])
        octets = self._bits(cells.ravel(), draw).view(np.uint8)
        chars = _HEX_PAIRS[octets].reshape(len(numbers), words * 16)[:, :length]
        offsets = np.arange(len(numbers) + 1, dtype=np.int32) * length
        return pa.StringArray.from_buffers(len(numbers), pa.py_buffer(offsets),
                                           pa.py_buffer(np.ascontiguousarray(chars).tobytes()))

    def _times(self, numbers: np.ndarray) -> pa.Array:
        return pa.array(self.config.event_times_ms(numbers), pa.int64()).cast(
            pa.timestamp("ms"))

    def _recent_person(self, numbers: np.ndarray, draw: int) -> np.ndarray:
        """A recent person's 0-based id: one of the latest ``NUM_ACTIVE_PEOPLE``, or up to
        ``PERSON_ID_LEAD`` ahead."""
        people = last_person_base0(numbers) + 1
        active = np.minimum(people, NUM_ACTIVE_PEOPLE)
        return people - active + self._below(numbers, draw, active + PERSON_ID_LEAD)

    def _recent_auction(self, numbers: np.ndarray, draw: int) -> np.ndarray:
        """One of the latest ``NUM_IN_FLIGHT_AUCTIONS`` auctions, or up to
        ``AUCTION_ID_LEAD`` ahead (0-based)."""
        latest = last_auction_base0(numbers)
        low = np.maximum(latest - NUM_IN_FLIGHT_AUCTIONS, 0)
        return low + self._below(numbers, draw, np.maximum(latest - low, 0) + 1
                                 + AUCTION_ID_LEAD)

    # -- the three kinds ----------------------------------------------------------------

    def _persons(self, numbers: np.ndarray) -> pa.RecordBatch:
        ids = last_person_base0(numbers) + FIRST_PERSON_ID
        first = self._pick(numbers, 1, _FIRST_NAMES)
        last = self._pick(numbers, 2, _LAST_NAMES)
        name = pa.compute.binary_join_element_wise(first, last, " ")
        email_user = self._hex(numbers, 3, 7)
        email = pa.compute.binary_join_element_wise(email_user, self._hex(numbers, 4, 5),
                                                    "@")
        email = pa.compute.binary_join_element_wise(email, pa.scalar("com"), ".")
        card = self._hex(numbers, 5, 16)
        return pa.RecordBatch.from_arrays([
            pa.array(ids), name, email, card, self._pick(numbers, 6, _US_CITIES),
            self._pick(numbers, 7, _US_STATES), self._times(numbers),
            self._hex(numbers, 8, _EXTRA_LENGTH["person"])], schema=PERSON_SCHEMA)

    def _auctions(self, numbers: np.ndarray) -> pa.RecordBatch:
        config = self.config
        ids = last_auction_base0(numbers) + FIRST_AUCTION_ID
        hot = self._below(numbers, 1, config.hot_seller_ratio) > 0
        hot_seller = (last_person_base0(numbers) // HOT_ID_GRANULE) * HOT_ID_GRANULE
        seller = np.where(hot, hot_seller, self._recent_person(numbers, 2)) + FIRST_PERSON_ID
        category = FIRST_CATEGORY_ID + self._below(numbers, 3, NUM_CATEGORIES)
        initial = self._price(numbers, 4)
        reserve = initial + self._price(numbers, 5)
        times = config.event_times_ms(numbers)
        # an auction runs for a span of event time worth up to ~500 events at the rate
        # in force (at least 1 ms): it closes while its bids are still being generated
        length_ms = 1 + self._below(numbers, 6, max(1, 500_000 // config.first_event_rate))
        expires = pa.array(times + length_ms, pa.int64()).cast(pa.timestamp("ms"))
        return pa.RecordBatch.from_arrays([
            pa.array(ids), self._hex(numbers, 7, 20), self._hex(numbers, 8, 100),
            pa.array(initial), pa.array(reserve), self._times(numbers), expires,
            pa.array(seller), pa.array(category),
            self._hex(numbers, 9, _EXTRA_LENGTH["auction"])], schema=AUCTION_SCHEMA)

    def _bids(self, numbers: np.ndarray) -> pa.RecordBatch:
        config = self.config
        hot_auction = (last_auction_base0(numbers) // HOT_ID_GRANULE) * HOT_ID_GRANULE
        auction = np.where(self._below(numbers, 1, config.hot_auction_ratio) > 0,
                           hot_auction, self._recent_auction(numbers, 2)) + FIRST_AUCTION_ID
        hot_bidder = (last_person_base0(numbers) // HOT_ID_GRANULE) * HOT_ID_GRANULE + 1
        bidder = np.where(self._below(numbers, 3, config.hot_bidder_ratio) > 0,
                          hot_bidder, self._recent_person(numbers, 4)) + FIRST_PERSON_ID
        price = self._price(numbers, 5)
        # a tenth of the bids come from a well-known channel, the rest from channel-<n>
        known = self._below(numbers, 6, 10) == 0
        channel_index = self._below(numbers, 7, 10_000)
        named = self._pick(numbers, 8, _CHANNELS)
        numbered = pa.compute.binary_join_element_wise(
            pa.scalar("channel"), pa.array(channel_index).cast(pa.string()), "-")
        channel = pa.compute.if_else(pa.array(known), named, numbered)
        url = pa.compute.binary_join_element_wise(
            pa.scalar("https://www.nexmark.com"), self._hex(numbers, 9, 5),
            self._hex(numbers, 10, 5), self._hex(numbers, 12, 5),
            pa.compute.binary_join_element_wise(
                pa.scalar("item.htm?query=1&channel_id="),
                pa.array(channel_index).cast(pa.string()), ""), "/")
        return pa.RecordBatch.from_arrays([
            pa.array(auction), pa.array(bidder), pa.array(price), channel, url,
            self._times(numbers), self._hex(numbers, 11, _EXTRA_LENGTH["bid"])],
            schema=BID_SCHEMA)
