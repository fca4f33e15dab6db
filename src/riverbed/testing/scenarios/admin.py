"""Topic administration through the admin clients of confluent-kafka and kafka-python.

Both functions walk the same life cycle on a fresh topic name and return the same shape,
a ``dict`` of step name to what the client observed (error names are Kafka's)::

    create               None | error      3 partitions, CREATE_CONFIGS
    create_existing      error             same name again (TOPIC_ALREADY_EXISTS)
    invalid_name         error             "bad name!" (INVALID_TOPIC_EXCEPTION)
    describe             {key: value}      WATCHED keys after create
    after_incremental    {key: value}      max.message.bytes SET 2048, retention.ms DELETE
    after_alter          {key: value}      legacy AlterConfigs with retention.ms=7200000 only
    create_partitions    None | error      3 -> 5
    decrease_partitions  error             5 -> 2 (INVALID_PARTITIONS)
    partitions           int               partition count in metadata afterwards
    delete               None | error
    exists_after_delete  bool              still listed 10 s after delete

Each ``after_*`` step waits (up to 5 s) for the describe to differ from the step before:
Kafka acknowledges an alter before every describe path sees it.
    delete_unknown       error             (UNKNOWN_TOPIC_OR_PARTITION)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from riverbed.protocol.error_codes import ErrorCode

WATCHED: tuple[str, ...] = ("cleanup.policy", "retention.ms", "max.message.bytes")
CREATE_CONFIGS = {"cleanup.policy": "compact", "retention.ms": "3600000"}


def _wait(predicate: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def _settled(describe: Callable[[], dict[str, str]], before: dict[str, str]) -> dict[str, str]:
    """The configs once an alter shows (Kafka applies config records asynchronously, so
    a describe right after an acknowledged alter may still answer the old values)."""
    seen: dict[str, str] = {}

    def changed() -> bool:
        seen.update(describe())
        return seen != before

    _wait(changed, 5.0)
    return seen


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"UNKNOWN({code})"


# -- confluent-kafka -----------------------------------------------------------------------


def _ck_error(future: Any) -> str | None:
    from confluent_kafka import KafkaException

    try:
        future.result(30)
    except KafkaException as exc:
        return _name(int(exc.args[0].code()))
    return None


def confluent_admin_lifecycle(bootstrap: str, topic: str) -> dict[str, Any]:
    """Run the life cycle above with ``confluent_kafka.admin.AdminClient``."""
    from confluent_kafka.admin import (  # type: ignore[attr-defined]  # not re-exported
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        NewPartitions,
        NewTopic,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "riverbed-compat-admin"})

    def describe() -> dict[str, str]:
        [fut] = admin.describe_configs([ConfigResource(ResourceType.TOPIC, topic)]).values()
        entries = fut.result(30)
        return {k: entries[k].value for k in WATCHED}

    def partition_count() -> int:
        md = admin.list_topics(topic, timeout=10).topics[topic]
        return len(md.partitions)

    out: dict[str, Any] = {}
    new = NewTopic(topic, 3, 1, config=dict(CREATE_CONFIGS))
    out["create"] = _ck_error(admin.create_topics([new])[topic])
    out["create_existing"] = _ck_error(admin.create_topics([NewTopic(topic, 3, 1)])[topic])
    out["invalid_name"] = _ck_error(admin.create_topics([NewTopic("bad name!", 1, 1)])["bad name!"])
    out["describe"] = describe()
    incremental = ConfigResource(
        ResourceType.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "2048", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
        ],
    )
    [fut] = admin.incremental_alter_configs([incremental]).values()
    fut.result(30)
    out["after_incremental"] = _settled(describe, out["describe"])
    legacy = ConfigResource(ResourceType.TOPIC, topic, set_config={"retention.ms": "7200000"})
    [fut] = admin.alter_configs([legacy]).values()
    fut.result(30)
    out["after_alter"] = _settled(describe, out["after_incremental"])
    out["create_partitions"] = _ck_error(admin.create_partitions([NewPartitions(topic, 5)])[topic])
    out["decrease_partitions"] = _ck_error(
        admin.create_partitions([NewPartitions(topic, 2)])[topic]
    )
    _wait(lambda: partition_count() == 5)
    out["partitions"] = partition_count()
    out["delete"] = _ck_error(admin.delete_topics([topic])[topic])
    out["exists_after_delete"] = not _wait(
        lambda: topic not in admin.list_topics(timeout=10).topics
    )
    unknown = topic + "-never-created"
    out["delete_unknown"] = _ck_error(admin.delete_topics([unknown])[unknown])
    return out


# -- kafka-python --------------------------------------------------------------------------


def kafka_python_admin_lifecycle(bootstrap: str, topic: str) -> dict[str, Any]:
    """Run the life cycle above with ``kafka.KafkaAdminClient``."""
    from kafka import KafkaAdminClient
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, client_id="riverbed-compat-kp-admin")
    try:

        def first_error(result: Any) -> str | None:
            for t in result["topics"]:
                if t["error_code"]:
                    return _name(t["error_code"])
            return None

        def create(name: str, partitions: int, configs: dict[str, str]) -> str | None:
            spec = {"num_partitions": partitions, "replication_factor": 1, "configs": configs}
            result = admin.create_topics({name: spec}, raise_errors=False)
            return first_error(result)

        def describe() -> dict[str, str]:
            res = admin.describe_configs(
                [ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"
            )
            entries = res["topic"][topic]
            return {k: _config_value(entries[k]) for k in WATCHED}

        def partition_count() -> int:
            [t] = admin.describe_topics([topic])
            return len(t["partitions"])

        def topic_errors(resp: Any) -> str | None:
            for t in resp.to_dict()["results"] if hasattr(resp, "to_dict") else resp["results"]:
                if t["error_code"]:
                    return _name(t["error_code"])
            return None

        out: dict[str, Any] = {}
        out["create"] = create(topic, 3, dict(CREATE_CONFIGS))
        out["create_existing"] = create(topic, 3, {})
        out["invalid_name"] = create("bad name!", 1, {})
        _wait(lambda: topic in admin.list_topics())
        out["describe"] = describe()
        admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    topic,
                    configs={
                        "max.message.bytes": "2048",
                        "retention.ms": ("DELETE", None),
                    },
                )
            ],
            incremental=True,
        )
        out["after_incremental"] = _settled(describe, out["describe"])
        admin.alter_configs(
            [
                ConfigResource(
                    ConfigResourceType.TOPIC,
                    topic,
                    configs={"retention.ms": "7200000"},
                )
            ],
            incremental=False,
        )
        out["after_alter"] = _settled(describe, out["after_incremental"])
        out["create_partitions"] = topic_errors(
            admin.create_partitions({topic: 5}, raise_errors=False)
        )
        out["decrease_partitions"] = topic_errors(
            admin.create_partitions({topic: 2}, raise_errors=False)
        )
        _wait(lambda: partition_count() == 5)
        out["partitions"] = partition_count()
        out["delete"] = _delete_error(admin, topic)
        out["exists_after_delete"] = not _wait(lambda: topic not in admin.list_topics())
        out["delete_unknown"] = _delete_error(admin, topic + "-never-created")
        return out
    finally:
        admin.close()


def _config_value(entry: Any) -> str:
    if isinstance(entry, dict):
        return str(entry.get("value"))
    return str(entry)


def _delete_error(admin: Any, topic: str) -> str | None:
    resp = admin.delete_topics([topic], raise_errors=False)
    for t in resp["topics"]:
        if t["error_code"]:
            return _name(t["error_code"])
    return None


def create_topic(
    bootstrap: str,
    topic: str,
    partitions: int = 3,
    configs: dict[str, str] | None = None,
    timeout_s: float = 20.0,
) -> None:
    """Create ``topic`` (confluent-kafka admin) and wait until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "riverbed-compat-setup"})
    new = NewTopic(topic, partitions, 1, config=dict(configs or {}))
    admin.create_topics([new])[topic].result(timeout_s)

    def ready() -> bool:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        return bool(
            md
            and not md.error
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        )

    if not _wait(ready, timeout_s):
        raise TimeoutError(f"topic {topic} not ready after {timeout_s}s")
