-- why: a Kafka table's WATERMARK is generated in the source per partition (no assigner above the scan), also for a computed rowtime, and debezium-json makes the source a changelog.
CREATE TABLE clicks (user_id BIGINT, url STRING, ts TIMESTAMP(3),
    `partition` INT METADATA VIRTUAL,
    WATERMARK FOR ts AS ts - INTERVAL '2' SECOND)
WITH ('connector' = 'kafka', 'topic' = 'clicks', 'format' = 'json',
      'properties.bootstrap.servers' = 'localhost:9092');
CREATE TABLE views (user_id BIGINT, epoch_ms BIGINT, ts AS TO_TIMESTAMP_LTZ(epoch_ms, 3),
    WATERMARK FOR ts AS ts)
WITH ('connector' = 'kafka', 'topic' = 'views', 'format' = 'json',
      'properties.bootstrap.servers' = 'localhost:9092');
CREATE TABLE users (user_id BIGINT, name STRING)
WITH ('connector' = 'kafka', 'topic' = 'users', 'format' = 'debezium-json',
      'properties.bootstrap.servers' = 'localhost:9092');
SELECT c.window_start, u.name, c.clicks, v.views
FROM (SELECT window_start, window_end, user_id, COUNT(*) AS clicks
      FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
      WHERE `partition` < 4
      GROUP BY window_start, window_end, user_id) c
JOIN (SELECT window_start, window_end, user_id, COUNT(*) AS views
      FROM TABLE(TUMBLE(TABLE views, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
      GROUP BY window_start, window_end, user_id) v
  ON c.user_id = v.user_id AND c.window_start = v.window_start AND c.window_end = v.window_end
JOIN users u ON u.user_id = c.user_id
