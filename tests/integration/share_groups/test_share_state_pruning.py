"""``__share_group_state`` is pruned: the prefix below every share partition's latest
snapshot is deleted as it grows, and a restart still restores the state exactly."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import AcknowledgeType
from share_helpers import (
    BROKER_CONFIG,
    close_all,
    create_topic,
    poll,
    produce,
    set_group_configs,
    share_consumer,
)

from riverbed.broker.share_partitions import SHARE_STATE_TOPIC_NAME
from riverbed.testing.embedded import EmbeddedBroker

CONFIG = {**BROKER_CONFIG, "share.coordinator.snapshot.update.records.per.snapshot": "5"}


def test_state_topic_is_pruned_and_replays_after_a_restart(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "data", CONFIG) as running:
        bs = running.bootstrap_servers
        running.broker.share_groups.partitions.pruner.min_records = 1
        create_topic(bs, "pr", 1)
        set_group_configs(bs, "prg", share_auto_offset_reset="earliest")
        produce(bs, "pr", [f"p{i}".encode() for i in range(100)], 1)
        consumer = share_consumer(bs, "prg", "pr")
        accepted: set[bytes] = set()
        try:
            deadline = time.monotonic() + 60
            while len(accepted) < 60:
                assert time.monotonic() < deadline, len(accepted)
                for m in poll(consumer, 0.2):  # one acknowledgement (state update) each
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                    consumer.commit_sync(30)
                    accepted.add(m.value() or b"")
        finally:
            close_all([consumer])
        state_log = running.broker.topics.partition_log(SHARE_STATE_TOPIC_NAME, 0)
        deadline = time.monotonic() + 30
        while state_log.log_start_offset == 0:
            assert time.monotonic() < deadline, "the state topic was never pruned"
            time.sleep(0.05)
        assert state_log.log_start_offset < state_log.log_end_offset
        running.restart()
        consumer = share_consumer(bs, "prg", "pr")
        rest: set[bytes] = set()
        try:
            deadline = time.monotonic() + 60
            while len(rest) < 100 - len(accepted):
                assert time.monotonic() < deadline, (len(accepted), len(rest))
                msgs = poll(consumer, 0.2)
                for m in msgs:
                    rest.add(m.value() or b"")
                    consumer.acknowledge(m, AcknowledgeType.ACCEPT)
                if msgs:
                    consumer.commit_sync(30)
        finally:
            close_all([consumer])
        assert not rest & accepted, "an ACCEPTed record came back after the restart"
        assert rest | accepted == {f"p{i}".encode() for i in range(100)}
