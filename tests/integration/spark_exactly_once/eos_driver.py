"""A Spark driver for the exactly-once crash tests, run as its own process so SIGKILL is real.

Usage: ``.venv/bin/python eos_driver.py CONFIG_JSON`` with keys ``bootstrap``, ``input``,
``output``, ``checkpoint``, ``max_offsets``, ``shuffle_partitions`` and optionally
``guarantee`` (the sink's ``deliveryGuarantee``, default exactly_once) and
``kill_after_batch`` (SIGKILL this process group once Spark reports progress for that
batch id, i.e. after Spark's commit log for it is written).

The query: read ``input`` (read_committed, ``maxOffsetsPerTrigger``), tag each value with
its input partition and offset, repartition by key (a shuffle: several sink tasks per
micro-batch), write to ``output`` with ``deliveryGuarantee=exactly_once``, trigger
``availableNow``: it processes what is committed in ``input`` when it starts and exits 0.
Deterministic, so a replayed micro-batch has the same rows in the same tasks.

The failure points of the sink (``RIVERBED_SPARK_FAILPOINT``) are armed by the test's
environment; this script makes itself a process-group leader's member whose group the
points kill (``RIVERBED_SPARK_FAILPOINT_PGID``): the driver, its JVM and its workers.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

from riverbed.spark.session import local_session
from riverbed.spark.transactional_failpoints import KILL_PGID_ENV


def main() -> int:
    config = json.loads(sys.argv[1])
    os.environ[KILL_PGID_ENV] = str(os.getpgid(0))
    spark = local_session(
        "riverbed-eos-driver",
        shuffle_partitions=int(config["shuffle_partitions"]),
    )
    servers = config["bootstrap"]
    rows = (
        spark.readStream.format("riverbed")
        .option("kafka.bootstrap.servers", servers)
        .option("subscribe", config["input"])
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(config["max_offsets"]))
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    tagged = rows.selectExpr(
        "key",
        "concat(CAST(value AS STRING), '|', CAST(partition AS STRING), ':', "
        "CAST(offset AS STRING)) AS value",
    ).repartition(int(config["shuffle_partitions"]), "key")
    query = (
        tagged.writeStream.format("riverbed")
        .option("kafka.bootstrap.servers", servers)
        .option("topic", config["output"])
        .option("deliveryGuarantee", config.get("guarantee", "exactly_once"))
        .options(**config.get("sink_options", {}))
        .option("checkpointLocation", config["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    print(f"query {query.id} started", flush=True)
    kill_after = config.get("kill_after_batch")
    while query.isActive:
        progress = query.lastProgress
        if (
            progress is not None
            and kill_after is not None
            and progress["batchId"] >= int(kill_after)
        ):
            print(f"killing after batch {progress['batchId']}", flush=True)
            os.killpg(0, signal.SIGKILL)
        query.awaitTermination(0.1)
    if query.exception() is not None:
        print(f"query failed: {query.exception()}", flush=True)
        return 3
    print(f"query done at {time.strftime('%H:%M:%S')}", flush=True)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
