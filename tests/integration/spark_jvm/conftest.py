"""Fixtures of the riverbed-jvm reader tests: data on two Kafka implementations, and ONE
Spark driver run (``jvm_driver.py``, its own process) that reads every case.

pytest's own process may already hold a SparkSession without the JVM reader (the other
Spark tests), and a JVM holds one SparkContext, so Spark runs in a subprocess with
``local_session(jvm_reader=True)`` (``local[2]``, 2 shuffle partitions).  The session
fixture :func:`results` prepares all topics on an embedded Riverbed broker first, then
runs the driver once with every case (``format("riverbed-jvm")`` and, for the
differential, ``format("riverbed")`` with the same options) and hands each test the rows
or the error of its cases: one Spark start for the directory (~40-90 s on a loaded 2-core
box).  :func:`kafka_results` does the same against the Apache Kafka reference broker
(``-m kafka``: the same tests, proving the reader is broker-agnostic).

librdkafka's mock cluster (used by tests/integration/spark) cannot serve the Java client:
it answers ApiVersions v5 with UNSUPPORTED_VERSION and a garbage throttle time (~20 min),
which the Java client honours before its v0 retry, so metadata never arrives.

The transactional topic keeps one transaction open (``transaction.timeout.ms`` 10 min)
until the session ends, so its last stable offset stays below its high watermark while
the driver reads.  No fixed sleeps: every wait has a deadline.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pyspark")

from confluent_kafka import KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.spark.jvm import JvmReaderBuildError, jvm_reader_classpath
from riverbed.testing.child_process import run_grouped
from riverbed.testing.embedded import EmbeddedBroker

DRIVER = Path(__file__).with_name("jvm_driver.py")
DRIVER_TIMEOUT_S = 420.0
BASE_TS = 1_700_000_000_000


@dataclass
class Data:
    """The topics the cases read, and what the tests expect of them."""

    bootstrap: str
    plain: str = ""
    pattern_prefix: str = ""
    txn: str = ""
    deleted: str = ""
    restart: str = ""
    sink_target: str = ""
    grow_prefix: str = ""
    workdir: Path = Path()
    committed_values: set[str] = field(default_factory=set)
    aborted_values: set[str] = field(default_factory=set)
    open_values: set[str] = field(default_factory=set)
    cases: dict[str, dict[str, Any]] = field(default_factory=dict)

    def case(self, name: str, fmt: str, **options: str) -> None:
        self.cases[name] = {"format": fmt, "options": options}

    def both(self, name: str, **options: str) -> None:
        """``jvm_<name>`` and ``py_<name>``: the same options on both formats."""
        self.case(f"jvm_{name}", "riverbed-jvm", **options)
        self.case(f"py_{name}", "riverbed", **options)


def _produce_plain(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(90):
        headers: list[tuple[str, str | bytes | None]] | None = None
        if i % 5 == 0:
            headers = [("h", b"x%d" % i), ("none", None), ("h", b"again")]
        producer.produce(
            topic,
            key=None if i % 7 == 0 else b"k%d" % (i % 13),
            value=None if i % 11 == 0 else b"v%d-\x00\xff" % i,
            partition=i % 3,
            timestamp=BASE_TS + i * 1000,
            headers=headers,
        )
    assert producer.flush(60) == 0


@contextlib.contextmanager
def _transactional_input(bootstrap: str, topic: str, data: Data) -> Iterator[None]:
    """Committed and aborted transactions (every third aborted), then one left open."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"jvm-input-{uuid.uuid4().hex[:8]}",
            "transaction.timeout.ms": 600_000,
        }
    )
    producer.init_transactions(60)
    for t in range(9):
        producer.begin_transaction()
        values = [f"t{t}-r{i}" for i in range(12)]
        for i, value in enumerate(values):
            producer.produce(topic, key=b"k%d" % i, value=value.encode(), partition=i % 4)
        producer.flush(60)
        if t % 3 == 2:
            producer.abort_transaction(60)
            data.aborted_values.update(values)
        else:
            producer.commit_transaction(60)
            data.committed_values.update(values)
    producer.begin_transaction()
    data.open_values = {f"open-{p}" for p in range(4)}
    for p in range(4):
        producer.produce(topic, key=b"open", value=f"open-{p}".encode(), partition=p)
    producer.flush(60)
    try:
        yield
    finally:
        with contextlib.suppress(KafkaException):
            producer.abort_transaction(60)


def _cases(data: Data) -> None:
    plain, boot = data.plain, data.bootstrap
    base = {"kafka.bootstrap.servers": boot}
    data.both("all", **base, subscribe=plain, includeHeaders="true")
    ranges = {
        "startingOffsets": json.dumps({plain: {"0": 3, "1": -2, "2": 10}}),
        "endingOffsets": json.dumps({plain: {"0": 20, "1": 7, "2": -1}}),
    }
    data.both("ranges", **base, subscribe=plain, **ranges)
    data.both("assign", **base, assign=json.dumps({plain: [0, 2]}))
    data.both("pattern", **base, subscribePattern=data.pattern_prefix + ".*")
    data.both("timestamps", **base, subscribe=plain, startingTimestamp=str(BASE_TS + 30_000))
    for level in ("read_committed", "read_uncommitted"):
        data.both(level, **base, subscribe=data.txn, **{"kafka.isolation.level": level})
    backwards = {
        "startingOffsets": json.dumps({plain: {"0": 10, "1": 0, "2": 0}}),
        "endingOffsets": json.dumps({plain: {"0": 3, "1": 5, "2": -1}}),
    }
    data.both("backwards_skipped", **base, subscribe=plain, failOnDataLoss="false", **backwards)
    data.case("err_backwards", "riverbed-jvm", **base, subscribe=plain, **backwards)
    # records [0, 4) of partition 0 of the deleted topic are gone: a task finds its start
    # below the log start offset (data loss at read time)
    deleted = {"startingOffsets": json.dumps({data.deleted: {"0": 0}})}
    data.both("deleted_skipped", **base, subscribe=data.deleted, failOnDataLoss="false", **deleted)
    data.case("err_deleted", "riverbed-jvm", **base, subscribe=data.deleted, **deleted)
    data.case(
        "err_unreachable",
        "riverbed-jvm",
        subscribe=plain,
        **{"kafka.bootstrap.servers": "127.0.0.1:1", "kafkaConsumer.pollTimeoutMs": "2000"},
    )
    _stream_cases(data)
    errors = {
        "unknown": {"subscribe": plain, "bogus": "1"},
        "no_bootstrap": {"subscribe": plain, "kafka.bootstrap.servers": ""},
        "two_subscriptions": {"subscribe": plain, "assign": json.dumps({plain: [0]})},
        "latest_start": {"subscribe": plain, "startingOffsets": "latest"},
        "auto_offset_reset": {"subscribe": plain, "kafka.auto.offset.reset": "earliest"},
        "bad_json": {"subscribe": plain, "startingOffsets": "{oops"},
        "missing_partition": {"subscribe": plain, "startingOffsets": json.dumps({plain: {"0": 1}})},
        "bad_bool": {"subscribe": plain, "includeHeaders": "yes"},
        "deserializer": {"subscribe": plain, "kafka.value.deserializer": "x"},
    }
    for name, options in errors.items():
        data.case(f"err_{name}", "riverbed-jvm", **{**base, **options})


STREAM_HEADERS = ["key", "value", "partition", "headers"]


def _stream_cases(data: Data) -> None:
    """Streaming reads and the JVM sink (``kind: stream``, see jvm_driver.py)."""
    boot, work = data.bootstrap, data.workdir
    base = {"kafka.bootstrap.servers": boot, "startingOffsets": "earliest"}

    def stream(name: str, **extra: Any) -> None:
        data.cases[name] = {
            "kind": "stream",
            "format": "riverbed-jvm",
            "checkpoint": str(work / f"{name}-checkpoint"),
            "output": str(work / f"{name}-output"),
            **extra,
        }

    stream(
        "stream_all",
        options={**base, "subscribe": data.plain, "includeHeaders": "true"}
        | {"maxOffsetsPerTrigger": "40"},
    )
    stream(
        "stream_restart",
        options={**base, "subscribe": data.restart, "maxOffsetsPerTrigger": "10"},
        then=[[f"k{i}", f"more-{i}", i % 2] for i in range(12)],
        then_topic=data.restart,
    )
    stream(
        "stream_new_topic",
        options={**base, "subscribePattern": data.grow_prefix + ".*"},
        then=[[f"k{i}", f"new-{i}", i % 2] for i in range(12)],
        then_topic=data.grow_prefix + "new",
        then_create=2,
    )
    sink = {"kafka.bootstrap.servers": boot, "topic": data.sink_target}
    stream(
        "stream_to_sink",
        options={**base, "subscribe": data.plain, "includeHeaders": "true"},
        sink={"format": "riverbed-jvm", "options": sink, "columns": STREAM_HEADERS},
    )
    data.case(
        "jvm_sink_out",
        "riverbed-jvm",
        **{"kafka.bootstrap.servers": boot},
        subscribe=data.sink_target,
        includeHeaders="true",
    )
    stream(
        "err_stream_ending",
        options={**base, "subscribe": data.plain, "endingOffsets": "latest"},
    )
    bad_sinks = {
        "unknown": ({**sink, "bogus": "1"}, ["value"]),
        "column": (sink, ["value", "offset"]),
        "no_topic": ({"kafka.bootstrap.servers": boot}, ["value"]),
        "exactly_once": ({**sink, "deliveryGuarantee": "exactly_once"}, ["value"]),
    }
    for name, (options, columns) in bad_sinks.items():
        stream(
            f"err_sink_{name}",
            options={**base, "subscribe": data.plain},
            sink={"format": "riverbed-jvm", "options": options, "columns": columns},
        )


def run_driver(cases: dict[str, Any], workdir: Path) -> dict[str, dict[str, Any]]:
    cases_file, out_file = workdir / "cases.json", workdir / "out.json"
    cases_file.write_text(json.dumps(cases))
    env = dict(os.environ)
    env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    status, out = run_grouped(
        [sys.executable, str(DRIVER), str(cases_file), str(out_file)], env, DRIVER_TIMEOUT_S
    )
    assert status is not None, f"driver timed out:\n{out[-3000:]}"
    assert status == 0, out[-3000:]
    results: dict[str, dict[str, Any]] = json.loads(out_file.read_text())
    return results


@pytest.fixture(scope="session")
def jvm_jars() -> str:
    """The reader's classpath (built once, cached); skips without mvn/javac."""
    try:
        return jvm_reader_classpath()
    except JvmReaderBuildError as exc:
        pytest.skip(str(exc))


@contextlib.contextmanager
def prepared(bootstrap: str, workdir: Path) -> Iterator[tuple[Data, dict[str, dict[str, Any]]]]:
    """Fill fresh topics on ``bootstrap``, run every case in one driver, yield the results
    (the open transaction stays open until the ``with`` block ends)."""
    data = Data(bootstrap, workdir=workdir)
    tag = uuid.uuid4().hex[:8]
    data.plain, data.txn = f"jvm-plain-{tag}", f"jvm-txn-{tag}"
    data.deleted = f"jvm-deleted-{tag}"
    data.pattern_prefix = f"jvm-pat-{tag}-"
    data.restart, data.sink_target = f"jvm-restart-{tag}", f"jvm-sink-{tag}"
    topics = {data.plain: 3, data.txn: 4, data.deleted: 1, f"{data.pattern_prefix}a": 2}
    topics[f"{data.pattern_prefix}b"] = 1
    topics[data.restart] = 2
    topics[data.sink_target] = 3
    data.grow_prefix = f"jvm-grow-{tag}-"
    topics[data.grow_prefix + "old"] = 1
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(t, n, 1, config={"retention.ms": "-1"}) for t, n in topics.items()]
    )
    for future in futures.values():
        future.result(60)
    for name in (data.plain, f"{data.pattern_prefix}a", f"{data.pattern_prefix}b"):
        _produce_plain(bootstrap, name)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1})
    for i in range(10):
        producer.produce(data.deleted, key=b"d", value=b"d%d" % i, partition=0)
    for i in range(30):
        producer.produce(data.restart, key=b"r%d" % i, value=b"first-%d" % i, partition=i % 2)
    for i in range(5):
        producer.produce(data.grow_prefix + "old", value=b"old-%d" % i, partition=0)
    assert producer.flush(60) == 0
    gone = admin.delete_records([KafkaTopicPartition(data.deleted, 0, 4)])
    assert next(iter(gone.values())).result(60).low_watermark == 4
    with _transactional_input(bootstrap, data.txn, data):
        _cases(data)
        yield data, run_driver(data.cases, workdir)


@pytest.fixture(scope="session")
def results(
    jvm_jars: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Data, dict[str, dict[str, Any]]]]:
    """Every case against an embedded Riverbed broker."""
    with (
        EmbeddedBroker(tmp_path_factory.mktemp("jvm-broker")) as broker,
        prepared(broker.bootstrap_servers, tmp_path_factory.mktemp("jvm-driver")) as found,
    ):
        yield found


@pytest.fixture(scope="session")
def kafka_results(
    jvm_jars: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Data, dict[str, dict[str, Any]]]]:
    """Every case against the Apache Kafka reference broker (``-m kafka`` only)."""
    from riverbed.testing.kafka_reference import KafkaReference

    with (
        KafkaReference() as kafka,
        prepared(kafka.bootstrap_servers, tmp_path_factory.mktemp("jvm-kafka")) as found,
    ):
        yield found
