"""The command-line contract against a real Apache Kafka broker (the ``kafka`` marker; jars
from Maven Central, cached): the commands use only standard Kafka APIs through
confluent-kafka, so produce, consume (by assignment and as a group), ``groups lag`` and
``--output json`` behave exactly as against Riverbed.  ``-m "not kafka"`` skips it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator

import pytest
from cli_helpers import new_topic, riverbed

from riverbed.testing.kafka_reference import KafkaReference

pytestmark = pytest.mark.kafka


@pytest.fixture(scope="module")
def bootstrap() -> Iterator[str]:
    for tool in ("java", "mvn"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not on PATH")
    with KafkaReference(overrides={"group.initial.rebalance.delay.ms": "0"}) as kafka:
        yield kafka.bootstrap_servers


def test_produce_consume_lag_and_json_on_apache_kafka(bootstrap: str) -> None:
    topic = new_topic(bootstrap, partitions=2)
    code, _, err = riverbed(
        bootstrap,
        "produce",
        topic,
        "-K",
        ":",
        "-p",
        "1",
        "-H",
        "a=b",
        stdin=b"k1:v1\nplain\nk3:v3\n",
    )
    assert (code, err) == (0, "")
    code, out, err = riverbed(
        bootstrap, "consume", topic, "--from-beginning", "-e", "--format", "json"
    )
    assert (code, err) == (0, "")
    records = [json.loads(line) for line in out.decode().splitlines()]
    assert [(r["partition"], r["offset"], r["key"], r["value"]) for r in records] == [
        (1, 0, "k1", "v1"),
        (1, 1, None, "plain"),
        (1, 2, "k3", "v3"),
    ]
    assert records[0]["headers"] == [{"key": "a", "value": "b"}]

    code, out, _ = riverbed(bootstrap, "consume", topic, "-g", "cli", "--from-beginning", "-c", "2")
    assert (code, out) == (0, b"v1\nplain\n")
    code, out, _ = riverbed(bootstrap, "groups", "lag", "cli", "--output", "json")
    assert code == 0
    [lag] = json.loads(out)
    assert lag["total_lag"] == 1 and lag["group"] == "cli"

    code, out, _ = riverbed(bootstrap, "topics", "describe", topic, "--output", "json")
    assert code == 0
    assert [p["log_end_offset"] for p in json.loads(out)["partitions"]] == [0, 3]
    code, _, err = riverbed(bootstrap, "produce", topic, "-p", "9", stdin=b"x\n")
    assert code == 1 and "--partition 9 does not exist" in err
