"""The ``clock-skew`` example: device events re-timed on the server's clock, then counted
per device and 5-minute window of the corrected time.

Contract (``riverbed pipeline run clock-skew``; docs/time-and-patterns.md):

* input topic ``device-events``: JSON ``{"device_id": str, "event_ts", "send_ts",
  "receive_ts"}`` (epoch ms; ``event_ts`` and ``send_ts`` by the device's clock,
  ``receive_ts`` by the server's);
* each event's time on the server's clock is ``corrected_ts = event_ts + (receive_ts -
  send_ts)`` (:func:`riverbed.pipelines.clock_skew.correct_per_event`: the device's clock
  offset plus the network delay, per event; stateless);
* output topic ``device-event-counts``, key ``device_id``, value JSON with exactly
  ``{"device_id", "window_start", "window_end", "events"}``: the events of the device
  whose ``corrected_ts`` is in the tumbling 5-minute window ``[window_start,
  window_end)``, emitted once, final, when the watermark (max ``corrected_ts`` of earlier
  micro-batches - 10 min - 1 ms) reaches ``window_end``.

Disorder is measured on the corrected time: an event up to exactly 10 min behind is
always counted.  Spark's window aggregation drops an event only when its window has
ended at the watermark when it arrives (``window_end <= W``, measured; not ``ts <= W``),
so one more than 10 min late is still counted while its window is open.  Spark's window
aggregation in append mode; state ``<checkpoint>/device-event-counts``.  Records that are
not a JSON object with a string ``device_id`` and the three integer times are skipped.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import LongType, StringType, StructField, StructType

from riverbed.pipelines.clock_skew import correct_per_event
from riverbed.pipelines.examples import WATERMARK_DELAY, ExampleOptions
from riverbed.pipelines.topic_streams import read_topics, write_topic

DESCRIPTION = "device events -> clock-skew corrected event time -> per-device 5 min counts"
INPUT_TOPIC = "device-events"
OUTPUT_TOPIC = "device-event-counts"
WINDOW = "5 minutes"

EVENT_JSON = StructType(
    [
        StructField("device_id", StringType()),
        StructField("event_ts", LongType()),
        StructField("send_ts", LongType()),
        StructField("receive_ts", LongType()),
    ]
)


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [INPUT_TOPIC]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT_TOPIC: {}}


def corrected_events(records: DataFrame) -> DataFrame:
    """Kafka rows -> ``device_id, event_ts, send_ts, receive_ts, corrected_ts,
    event_time`` (the corrected time as a timestamp; malformed rows skipped)."""
    event = F.from_json(F.col("value").cast("string"), EVENT_JSON).alias("v")
    parsed = records.select(event).select("v.*").na.drop()
    return correct_per_event(parsed).withColumn("event_time", F.timestamp_millis("corrected_ts"))


def device_counts(events: DataFrame) -> DataFrame:
    """``device_id, window_start, window_end, events`` (a batch, or a watermarked stream
    in append mode)."""
    counts = events.groupBy("device_id", F.window("event_time", WINDOW).alias("w")).agg(
        F.count(F.lit(1)).alias("events")
    )
    return counts.select(
        "device_id",
        F.unix_millis(F.col("w.start")).alias("window_start"),
        F.unix_millis(F.col("w.end")).alias("window_end"),
        "events",
    )


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start ``device-event-counts`` (checkpoint under that name)."""
    events = corrected_events(read_topics(spark, options, [INPUT_TOPIC]))
    counts = device_counts(events.withWatermark("event_time", WATERMARK_DELAY))
    value = F.to_json(
        F.struct("device_id", "window_start", "window_end", "events"),
        {"ignoreNullFields": "false"},
    )
    records = counts.select(F.col("device_id").alias("key"), value.alias("value"))
    return [write_topic(records, options, OUTPUT_TOPIC, OUTPUT_TOPIC)]
