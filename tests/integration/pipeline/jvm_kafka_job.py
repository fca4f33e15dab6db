"""Run in a subprocess: Spark's JVM Kafka connector reading and writing a broker.

argv: bootstrap servers, input topic, output topic, checkpoint dir, jar paths (comma
separated).  Prints one JSON line: what a batch read saw and how many rows a streaming
copy wrote.  A SparkSession of its own, so the pytest process keeps exactly one.
"""

from __future__ import annotations

import json
import sys

from riverbed.pipelines.pageviews import local_spark


def main() -> None:
    bootstrap, source, target, checkpoint, jars = sys.argv[1:6]
    spark = local_spark("riverbed-jvm-kafka", {"spark.jars": jars})
    try:
        rows = (
            spark.read.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source)
            .load()
            .selectExpr(
                "CAST(key AS STRING) AS k", "CAST(value AS STRING) AS v", "partition", "offset"
            )
            .collect()
        )
        query = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("key", "upper(CAST(value AS STRING)) AS value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", target)
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        error = query.exception()
        progress = query.recentProgress
        print(
            json.dumps(
                {
                    "read": sorted([r["k"], r["v"], r["partition"], r["offset"]] for r in rows),
                    "written": sum(p["numInputRows"] for p in progress),
                    "error": None if error is None else str(error),
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
