"""Kafka transactions with confluent-kafka against Apache Kafka and Riverbed: the same
records, offsets (markers included), last stable offsets and fencing error on both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from riverbed.testing.scenarios import transactions

EXPECTED_COMMITTED = {b"c1", b"c2", b"c3", b"c4", b"s1", b"s2"}


def test_commit_abort_fence_and_an_open_transaction(
    server: Any, new_topic: Callable[..., str]
) -> None:
    topic = new_topic(2)
    outcome = transactions.commit_abort_fence(server.bootstrap_servers, topic)
    assert {v for _p, _o, v in outcome.read_committed} == EXPECTED_COMMITTED
    assert {v for _p, _o, v in outcome.read_uncommitted} == EXPECTED_COMMITTED | {
        b"a1",
        b"a2",
        b"z1",
        b"open",
    }
    assert outcome.fenced == "_FENCED"  # librdkafka's fatal "fenced by a newer instance"
    # The open transaction holds the LSO at its first offset on its partition.
    assert outcome.end_offsets_committed != outcome.end_offsets_uncommitted
    # What Kafka 4.1.1 gives for the same calls (offsets count the markers).
    assert outcome == EXPECTED_OUTCOME, repr(outcome).replace(" ", "")


EXPECTED_OUTCOME = transactions.TxnOutcome(
    read_committed=(
        (0, 0, b"c1"),
        (0, 1, b"c3"),
        (0, 5, b"c4"),
        (0, 9, b"s1"),
        (1, 0, b"c2"),
        (1, 4, b"s2"),
    ),
    read_uncommitted=(
        (0, 0, b"c1"),
        (0, 1, b"c3"),
        (0, 3, b"a1"),
        (0, 5, b"c4"),
        (0, 7, b"z1"),
        (0, 9, b"s1"),
        (0, 11, b"open"),
        (1, 0, b"c2"),
        (1, 2, b"a2"),
        (1, 4, b"s2"),
    ),
    end_offsets_committed=(11, 6),
    end_offsets_uncommitted=(12, 6),
    fenced="_FENCED",
)
"""Recorded from Apache Kafka 4.1.1 (``-m kafka``); Riverbed gives the same."""
