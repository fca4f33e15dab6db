"""A consumer-group member run as a subprocess (so a test can SIGKILL it): prints its
assignment as one JSON line whenever it changes.  Usage: group_member.py BOOTSTRAP GROUP
TOPIC PROTOCOL."""

from __future__ import annotations

import json
import sys

from confluent_kafka import Consumer


def main() -> None:
    bootstrap, group, topic, protocol = sys.argv[1:5]
    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "auto.offset.reset": "earliest",
    }
    if protocol == "classic":
        conf |= {"session.timeout.ms": 6000, "heartbeat.interval.ms": 500}
    consumer = Consumer(conf)
    consumer.subscribe([topic])
    last: list[int] | None = None
    while True:
        consumer.poll(0.1)
        now = sorted(tp.partition for tp in consumer.assignment())
        if now != last:
            print(json.dumps(now), flush=True)
            last = now


if __name__ == "__main__":
    main()
