"""The state enum is Kafka's table, and the broker settings parse as Kafka names them."""

from __future__ import annotations

import pytest

from riverbed.coordinator.config import CoordinatorConfigError
from riverbed.coordinator.errors import IllegalStateTransitionError
from riverbed.coordinator.transactions import TransactionState, transaction_config_from_props

S = TransactionState

# Kafka's TransactionState.validPreviousStates (TransactionMetadata.scala, 4.x)
KAFKA_PREVIOUS = {
    S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
    S.PREPARE_COMMIT: {S.ONGOING},
    S.PREPARE_ABORT: {
        S.ONGOING,
        S.PREPARE_EPOCH_FENCE,
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    },
    S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
    S.COMPLETE_ABORT: {S.PREPARE_ABORT},
    S.DEAD: {S.EMPTY, S.COMPLETE_ABORT, S.COMPLETE_COMMIT},
    S.PREPARE_EPOCH_FENCE: {S.ONGOING},
}


def test_next_states_are_kafkas_previous_states_read_forwards() -> None:
    for state in S:
        assert state.next_states == {t for t, prev in KAFKA_PREVIOUS.items() if state in prev}


def test_ids_and_names_are_kafkas() -> None:
    assert [(s.id, s.wire_name) for s in S] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert S.from_id(3) is S.PREPARE_ABORT and S.from_wire("Ongoing") is S.ONGOING
    assert S.from_wire("ongoing") is None
    with pytest.raises(ValueError):
        S.from_id(8)


def test_forbidden_transition_raises() -> None:
    with pytest.raises(IllegalStateTransitionError):
        S.PREPARE_COMMIT.check_transition(S.COMPLETE_ABORT)
    with pytest.raises(IllegalStateTransitionError):
        S.DEAD.check_transition(S.EMPTY)


def test_settings_parse_with_kafka_names() -> None:
    config = transaction_config_from_props(
        {
            "transaction.max.timeout.ms": "60000",
            "transactional.id.expiration.ms": "1000",
            "transaction.state.log.num.partitions": "3",
            "log.dirs": "/ignored",
        }
    )
    assert (
        config.transaction_max_timeout_ms,
        config.transactional_id_expiration_ms,
        config.transaction_state_log_num_partitions,
    ) == (60_000, 1000, 3)
    with pytest.raises(CoordinatorConfigError, match=r"transaction\.max\.timeout\.ms"):
        transaction_config_from_props({"transaction.max.timeout.ms": "soon"})
    with pytest.raises(CoordinatorConfigError, match="out of range"):
        transaction_config_from_props({"transaction.state.log.num.partitions": "0"})
