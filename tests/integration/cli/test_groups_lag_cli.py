"""``riverbed groups lag [GROUP]`` against an embedded broker: per-partition committed
offset, log end offset and lag, a total per group, every group when none is named, JSON
with ``--output json``, and one line for an unknown group."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from cli_helpers import BROKER_CONFIG, new_topic, riverbed
from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from riverbed.testing.embedded import EmbeddedBroker


@pytest.fixture(scope="module")
def bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with EmbeddedBroker(tmp_path_factory.mktemp("lag-data"), BROKER_CONFIG) as broker:
        yield broker.bootstrap_servers


def fill(bootstrap: str, topic: str, per_partition: dict[int, int]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, count in per_partition.items():
        for i in range(count):
            producer.produce(topic, b"v%d" % i, partition=partition)
    assert producer.flush(30) == 0


def commit(bootstrap: str, group: str, topic: str, offsets: dict[int, int]) -> None:
    """Commit offsets for an empty group, as a stopped consumer would have left them."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p, o) for p, o in offsets.items()]
    )
    admin.alter_consumer_group_offsets([request])[group].result(30)


def test_lag_of_one_group_of_all_groups_and_as_json(bootstrap: str) -> None:
    orders = new_topic(bootstrap, partitions=3)
    fill(bootstrap, orders, {0: 10, 1: 4, 2: 0})
    commit(bootstrap, "billing", orders, {0: 7, 1: 4})
    commit(bootstrap, "audit", orders, {0: 1})

    code, out, err = riverbed(bootstrap, "groups", "lag", "billing")
    assert (code, err) == (0, "")
    assert out.decode().splitlines() == [
        "GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG",
        f"billing {orders} 0 7 10 3",
        f"billing {orders} 1 4 4 0",
        "billing TOTAL-LAG 3",
    ]

    code, out, _ = riverbed(bootstrap, "groups", "lag")
    assert code == 0
    lines = out.decode().splitlines()
    assert f"audit {orders} 0 1 10 9" in lines and "audit TOTAL-LAG 9" in lines
    assert "billing TOTAL-LAG 3" in lines

    code, out, _ = riverbed(bootstrap, "groups", "lag", "billing", "--output", "json")
    assert code == 0
    assert json.loads(out) == [
        {
            "group": "billing",
            "state": "EMPTY",
            "total_lag": 3,
            "partitions": [
                {
                    "topic": orders,
                    "partition": 0,
                    "committed_offset": 7,
                    "log_end_offset": 10,
                    "lag": 3,
                    "member": None,
                },
                {
                    "topic": orders,
                    "partition": 1,
                    "committed_offset": 4,
                    "log_end_offset": 4,
                    "lag": 0,
                    "member": None,
                },
            ],
        }
    ]

    code, _, err = riverbed(bootstrap, "groups", "lag", "no-such-group")
    assert (code, err) == (1, "riverbed: error: group no-such-group does not exist\n")
