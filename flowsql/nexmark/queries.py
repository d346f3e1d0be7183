"""The Nexmark queries q0-q22 in their Flink SQL form, over the tables ``person``,
``auction`` and ``bid`` (``flowsql.nexmark.tables``).

Each query is its SELECT; the Flink suite writes it ``INSERT INTO nexmark_qN SELECT ...``
into a blackhole table of the result's columns, which the runner creates the same way
(:func:`sink_statements`). Written from the suite's published descriptions:

q0 pass-through; q1 currency conversion (dollars to euros); q2 selection of some auctions;
q3 local item suggestion (sellers in some states with auctions in category 10); q4 average
closing price per category; q5 hot items (the auctions with most bids per 10 s sliding
window, every 2 s); q6 average selling price per seller over its last 10 auctions (not
supported by Flink either); q7 highest bid per 10 s window; q8 persons who opened an auction
in the 10 s window they registered in; q9 winning bid of each auction; q10 bids logged with
their day and minute; q11 bids per bidder session (10 s gap); q12 bids per bidder per 10 s
of processing time; q13 bids joined with a bounded side input; q14 bids with a computed
time-of-day class and a user-defined function's count of 'c' in ``extra``; q15 daily
bidding statistics; q16 daily statistics per channel; q17 daily statistics per auction;
q18 each bidder's last bid per auction; q19 the 10 highest bids per auction; q20 bids
expanded with their auction (category 10); q21 bids with a channel id from their url;
q22 bids with their url's directories.
"""

from __future__ import annotations

#: the columns of q13's bounded side input table ``side_input``
SIDE_INPUT_COLUMNS = "`key` BIGINT, `value` VARCHAR"
#: rows of the side input: keys 0 .. SIDE_INPUT_ROWS - 1
SIDE_INPUT_ROWS = 10_000

_RANKS = """count(*) AS total_bids,
  count(*) FILTER (WHERE price < 10000) AS rank1_bids,
  count(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  count(*) FILTER (WHERE price >= 1000000) AS rank3_bids"""

_DISTINCT_RANKS = """count(DISTINCT bidder) AS total_bidders,
  count(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
  count(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
  count(DISTINCT auction) AS total_auctions,
  count(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
  count(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions"""

_HOP_COUNTS = """SELECT auction, count(*) AS num, window_start AS starttime,
         window_end AS endtime
  FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND,
                 INTERVAL '10' SECOND))
  GROUP BY auction, window_start, window_end"""

QUERIES: dict[str, str] = {
    "q0": "SELECT auction, bidder, price, `dateTime`, extra FROM bid",
    "q1": "SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid",
    "q2": "SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0",
    "q3": """SELECT P.name, P.city, P.state, A.id
FROM auction AS A INNER JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA')""",
    "q4": """SELECT Q.category, AVG(Q.final) AS avg_final
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category""",
    "q5": f"""SELECT AuctionBids.auction, AuctionBids.num
FROM (
  {_HOP_COUNTS}
) AS AuctionBids
JOIN (
  SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM (
    {_HOP_COUNTS}
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn""",
    "q6": """SELECT Q.seller, AVG(Q.final) OVER (PARTITION BY Q.seller ORDER BY Q.`dateTime`
                                      ROWS BETWEEN 10 PRECEDING AND CURRENT ROW) AS avg_final
FROM (
  SELECT MAX(B.price) AS final, A.seller, B.`dateTime`
  FROM auction AS A, bid AS B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
  GROUP BY A.id, A.seller
) AS Q""",
    "q7": """SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS `dateTime`
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.`dateTime` BETWEEN B1.`dateTime` - INTERVAL '10' SECOND AND B1.`dateTime`""",
    "q8": """SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime""",
    "q9": """SELECT id, itemName, description, initialBid, reserve, `dateTime`, expires, seller,
       category, extra, auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.`dateTime` AS bid_dateTime,
         B.extra AS bid_extra,
         ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC)
           AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
)
WHERE rownum <= 1""",
    "q10": """SELECT auction, bidder, price, `dateTime`, extra,
       DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS dt, DATE_FORMAT(`dateTime`, 'HH:mm') AS hm
FROM bid""",
    "q11": """SELECT B.bidder, count(*) AS bid_count,
       SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
       SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND)""",
    "q12": """SELECT B.bidder, count(*) AS bid_count,
       TUMBLE_START(B.p_time, INTERVAL '10' SECOND) AS starttime,
       TUMBLE_END(B.p_time, INTERVAL '10' SECOND) AS endtime
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
GROUP BY B.bidder, TUMBLE(B.p_time, INTERVAL '10' SECOND)""",
    "q13": """SELECT B.auction, B.bidder, B.price, B.`dateTime`, S.`value`
FROM (SELECT *, PROCTIME() AS p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON MOD(B.auction, 10000) = S.`key`""",
    "q14": """SELECT auction, bidder, 0.908 * price AS price,
       CASE
         WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
         WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
         ELSE 'otherTime'
       END AS bidTimeType,
       `dateTime`, extra, count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000""",
    "q15": f"""SELECT DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`,
  {_RANKS},
  {_DISTINCT_RANKS}
FROM bid
GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')""",
    "q16": f"""SELECT channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`,
  max(DATE_FORMAT(`dateTime`, 'HH:mm')) AS `minute`,
  {_RANKS},
  {_DISTINCT_RANKS}
FROM bid
GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')""",
    "q17": f"""SELECT auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`,
  {_RANKS},
  min(price) AS min_price, max(price) AS max_price, avg(price) AS avg_price,
  sum(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')""",
    "q18": """SELECT auction, bidder, price, channel, url, `dateTime`, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC)
    AS rank_number
  FROM bid
)
WHERE rank_number <= 1""",
    "q19": """SELECT auction, bidder, price, channel, url, `dateTime`, extra, rank_number
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 10""",
    "q20": """SELECT auction, bidder, price, channel, url, B.`dateTime` AS bid_dateTime,
       B.extra AS bid_extra, itemName, description, initialBid, reserve,
       A.`dateTime` AS auction_dateTime, expires, seller, category, A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10""",
    "q21": """SELECT auction, bidder, price, channel,
  CASE
    WHEN lower(channel) = 'apple' THEN '0'
    WHEN lower(channel) = 'google' THEN '1'
    WHEN lower(channel) = 'facebook' THEN '2'
    WHEN lower(channel) = 'baidu' THEN '3'
    ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
  END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL
   OR lower(channel) IN ('apple', 'google', 'facebook', 'baidu')""",
    "q22": """SELECT auction, bidder, price, channel,
       SPLIT_INDEX(url, '/', 3) AS dir1, SPLIT_INDEX(url, '/', 4) AS dir2,
       SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid""",
}

QUERY_NAMES = tuple(QUERIES)

