"""AlterConfigs, IncrementalAlterConfigs and InitProducerId against in-memory fakes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeVar

from handler_fakes import FakeBroker, FakeTransactions, answer, ctx

from riverbed.broker.handlers import alter_configs, init_producer_id
from riverbed.broker.handlers.describe_configs import BROKER, TOPIC
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.messages import (
    AlterConfigsRequest,
    IncrementalAlterConfigsRequest,
    InitProducerIdRequest,
)

Op = IncrementalAlterConfigsRequest.AlterableConfig
SET, DELETE, APPEND, SUBTRACT = (
    alter_configs.SET,
    alter_configs.DELETE,
    alter_configs.APPEND,
    alter_configs.SUBTRACT,
)


def _incremental(
    broker: FakeBroker,
    *ops: Op,
    name: str = "t",
    resource_type: int = TOPIC,
    validate_only: bool = False,
) -> tuple[int, str | None]:
    request = IncrementalAlterConfigsRequest(
        resources=[
            IncrementalAlterConfigsRequest.AlterConfigsResource(
                resource_type=resource_type, resource_name=name, configs=list(ops)
            )
        ],
        validate_only=validate_only,
    )
    response = answer(
        alter_configs.handle_incremental,
        broker,
        ctx(alter_configs.INCREMENTAL_ALTER_CONFIGS_KEY, 1),
        request,
    )
    [result] = response.responses
    return result.error_code, result.error_message


def _broker() -> FakeBroker:
    broker = FakeBroker()
    broker.topics.add("t", 1, **{"cleanup.policy": "delete", "retention.ms": "10"})
    return broker


def _configs(broker: FakeBroker) -> dict[str, str]:
    topic = broker.topics.get("t")
    assert topic is not None
    return topic.configs


def test_incremental_set_delete_append_subtract() -> None:
    broker = _broker()
    assert _incremental(
        broker,
        Op(name="segment.ms", config_operation=SET, value="60000"),
        Op(name="retention.ms", config_operation=DELETE, value=None),
        Op(name="cleanup.policy", config_operation=APPEND, value="compact, delete"),
    ) == (ErrorCode.NONE, None)
    assert _configs(broker) == {"cleanup.policy": "delete,compact", "segment.ms": "60000"}
    _incremental(broker, Op(name="cleanup.policy", config_operation=SUBTRACT, value="delete"))
    assert _configs(broker)["cleanup.policy"] == "compact"


def test_incremental_refusals_name_the_key_and_change_nothing() -> None:
    broker = _broker()
    code, message = _incremental(
        broker, Op(name="retention.ms", config_operation=APPEND, value="5")
    )
    assert code == ErrorCode.INVALID_CONFIG and "retention.ms" in (message or "")
    code, message = _incremental(broker, Op(name="x", config_operation=SET, value=None))
    assert code == ErrorCode.INVALID_CONFIG and "SET needs a value" in (message or "")
    code, _ = _incremental(broker, Op(name="x", config_operation=9, value="1"))
    assert code == ErrorCode.INVALID_CONFIG
    assert _configs(broker) == {"cleanup.policy": "delete", "retention.ms": "10"}


def test_validate_only_and_the_resources_that_cannot_change() -> None:
    broker = _broker()
    set_it = Op(name="retention.ms", config_operation=SET, value="99")
    assert _incremental(broker, set_it, validate_only=True)[0] == ErrorCode.NONE
    assert _configs(broker)["retention.ms"] == "10"
    assert _incremental(broker, set_it, name="7", resource_type=BROKER)[0] == (
        ErrorCode.INVALID_REQUEST
    )
    assert _incremental(broker, set_it, name="x", resource_type=99)[0] == ErrorCode.INVALID_REQUEST
    assert _incremental(broker, set_it, name="nope")[0] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_alter_configs_replaces_every_override() -> None:
    broker = _broker()
    request = AlterConfigsRequest(
        resources=[
            AlterConfigsRequest.AlterConfigsResource(
                resource_type=TOPIC,
                resource_name="t",
                configs=[
                    AlterConfigsRequest.AlterableConfig(name="segment.ms", value="1000"),
                    AlterConfigsRequest.AlterableConfig(name="ignored", value=None),
                ],
            )
        ]
    )
    response = answer(
        alter_configs.handle_alter, broker, ctx(alter_configs.ALTER_CONFIGS_KEY, 1), request
    )
    assert [r.error_code for r in response.responses] == [ErrorCode.NONE]
    assert _configs(broker) == {"segment.ms": "1000"}


R = TypeVar("R")


@dataclass
class FakeProducerIds:
    calls: list[tuple[int, int]] = field(default_factory=list)

    def init_producer(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        self.calls.append((producer_id, producer_epoch))
        return (1000, 0) if producer_id < 0 else (producer_id, producer_epoch + 1)


@dataclass
class IdsDeps:
    producer_ids: FakeProducerIds = field(default_factory=FakeProducerIds)
    transactions: FakeTransactions = field(default_factory=FakeTransactions)


def _init(deps: IdsDeps, version: int, **fields: Any) -> Any:
    return answer(
        init_producer_id.handle,
        deps,
        ctx(init_producer_id.API_KEY, version),
        InitProducerIdRequest(**fields),
    )


def test_init_producer_id_new_and_bumped_epoch() -> None:
    deps = IdsDeps()
    fresh = _init(deps, 4, transactional_id=None)
    assert (fresh.error_code, fresh.producer_id, fresh.producer_epoch) == (ErrorCode.NONE, 1000, 0)
    bumped = _init(deps, 4, transactional_id=None, producer_id=1000, producer_epoch=0)
    assert (bumped.producer_id, bumped.producer_epoch) == (1000, 1)
    assert deps.producer_ids.calls == [(-1, -1), (1000, 0)]


def test_transactional_ids_get_epochs_from_the_transaction_coordinator() -> None:
    deps = IdsDeps()
    first = _init(deps, 4, transactional_id="tx", transaction_timeout_ms=60_000)
    assert (first.error_code, first.producer_id, first.producer_epoch) == (ErrorCode.NONE, 5000, 0)
    again = _init(deps, 4, transactional_id="tx", transaction_timeout_ms=60_000)
    assert (again.producer_id, again.producer_epoch) == (5000, 1)
    assert deps.producer_ids.calls == []


def test_transactional_init_answers_coordinator_not_available_when_it_cannot_start() -> None:
    deps = IdsDeps(transactions=FakeTransactions(unavailable=True))
    refused = _init(deps, 4, transactional_id="tx", transaction_timeout_ms=60_000)
    assert (refused.error_code, refused.producer_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)


def test_transactional_init_with_a_bad_timeout_is_refused() -> None:
    deps = IdsDeps()
    refused = _init(deps, 4, transactional_id="tx", transaction_timeout_ms=10**9)
    assert refused.error_code == ErrorCode.INVALID_TRANSACTION_TIMEOUT
