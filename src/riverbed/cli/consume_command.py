"""``riverbed consume TOPIC``: print records, one line each, like ``kcat -C``.

Where to start (at most one): ``--from-beginning`` (the log start offset), ``--offset N``
(offset N; a negative N means N records before the end, as ``kcat -o -N``), ``--timestamp
MS`` (the first record at or after MS, epoch millis; the end when there is none).  Default:
the end, so only new records are printed (as ``kafka-console-consumer``).

Without ``--group`` the command reads every partition of TOPIC (or only ``--partition N``)
by assignment: no group is joined and nothing is committed.  With ``--group G`` it joins
G (subscribe), starts from G's committed offsets (``--from-beginning`` applies only where
G has none, as Kafka's console consumer; ``--offset``/``--timestamp`` override them on
every assignment) and commits what it printed; ``--partition`` cannot be combined with it.

When to stop: by default it follows the topic until Ctrl-C (exit 130) or SIGTERM (143),
closing the consumer cleanly (a group's offsets are committed).  ``--exit-at-end``/``-e``
exits 0 once every assigned partition has been read up to its end (``kcat -e``);
``--max-messages N`` exits 0 after N records.  A closed stdout (``| head``) exits 0.

Output, ``--format text`` (default): the value, one per line, written as raw bytes; with
``--print-key`` or ``--key-separator SEP`` (default SEP: a tab) the key, SEP, then the
value.  Null keys and values print as empty.  Records whose value contains a newline
span several lines; use the JSON format for those.

``--format json``: one JSON object per line, rpk's field names::

    {"headers": [{"key": "k", "value": "v"}], "key": "k1", "offset": 7, "partition": 0,
     "timestamp": 1700000000000, "timestamp_type": "CreateTime", "topic": "t", "value": "v1"}

``key``/``value``/header values are UTF-8 strings or null; bytes that are not UTF-8 are
base64-encoded and flagged with ``"key_encoding"``/``"value_encoding"``/``"encoding":
"base64"`` beside them.

Errors: a missing topic or partition, a fatal client error, or a broker refusal (e.g.
authorization) is one line and exit 1; transient errors (a broker connection lost) are
one warning line on stderr each while the client retries.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import sys
from collections.abc import Callable
from typing import Any, BinaryIO

import click

from riverbed.cli.kafka_admin import (
    TIMEOUT_S,
    bootstrap_option,
    check_reachable,
    client_config,
    property_option,
)
from riverbed.cli.produce_command import parse_separator
from riverbed.errors import ConfigError, RiverbedError

POLL_S = 0.2
BATCH = 500
ANONYMOUS_GROUP = "riverbed-cli-consume"  # librdkafka needs one; never joined nor committed


class ConsumeError(RiverbedError):
    """``riverbed consume`` failed (message is for the user)."""


def _text(data: bytes | None, field: str, out: dict[str, Any]) -> None:
    if data is None:
        out[field] = None
        return
    try:
        out[field] = data.decode("utf-8")
    except UnicodeDecodeError:
        out[field] = base64.b64encode(data).decode("ascii")
        out[f"{field}_encoding"] = "base64"


def json_record(msg: Any) -> dict[str, Any]:
    """The JSON object printed for one confluent-kafka Message."""
    ts_type, ts = msg.timestamp()
    record: dict[str, Any] = {
        "topic": msg.topic(),
        "partition": msg.partition(),
        "offset": msg.offset(),
        "timestamp": ts,
        "timestamp_type": {1: "CreateTime", 2: "LogAppendTime"}.get(ts_type),
    }
    _text(msg.key(), "key", record)
    _text(msg.value(), "value", record)
    headers = []
    for key, value in msg.headers() or []:
        header: dict[str, Any] = {"key": key}
        _text(value if not isinstance(value, str) else value.encode(), "value", header)
        if "value_encoding" in header:
            header["encoding"] = header.pop("value_encoding")
        headers.append(header)
    record["headers"] = headers
    return record


def _formatter(fmt: str, separator: bytes | None) -> Callable[[Any], bytes]:
    if fmt == "json":
        return lambda msg: (
            json.dumps(json_record(msg), sort_keys=True, ensure_ascii=False).encode("utf-8") + b"\n"
        )
    if separator is None:
        return lambda msg: (msg.value() or b"") + b"\n"
    return lambda msg: (msg.key() or b"") + separator + (msg.value() or b"") + b"\n"


class _Signals:
    """SIGINT/SIGTERM set a flag the poll loop checks (at most ``POLL_S`` later)."""

    def __init__(self) -> None:
        self.received: int | None = None

    def install(self) -> None:
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, self._handle)

    def _handle(self, signum: int, _frame: object) -> None:
        self.received = signum


def _partitions(consumer: Any, topic: str, partition: int | None) -> list[int]:
    from confluent_kafka import KafkaException

    try:
        metadata = consumer.list_topics(topic, timeout=TIMEOUT_S).topics.get(topic)
    except KafkaException as exc:
        raise ConsumeError(f"reading metadata of {topic} failed: {exc.args[0].str()}") from None
    if metadata is None or metadata.error is not None or not metadata.partitions:
        reason = metadata.error.str() if metadata is not None and metadata.error else "unknown"
        raise ConsumeError(f"topic {topic} is not available: {reason}")
    found = sorted(metadata.partitions)
    if partition is None:
        return found
    if partition not in metadata.partitions:
        raise ConsumeError(
            f"topic {topic} has {len(found)} partition(s); --partition {partition} does not exist"
        )
    return [partition]


class _Start:
    """Where each partition starts, from the command line's choice."""

    def __init__(
        self,
        consumer: Any,
        topic: str,
        from_beginning: bool,
        offset: int | None,
        timestamp: int | None,
    ) -> None:
        self._consumer, self._topic = consumer, topic
        self.from_beginning, self.offset, self.timestamp = from_beginning, offset, timestamp

    @property
    def explicit(self) -> bool:
        return self.offset is not None or self.timestamp is not None

    def offsets(self, partitions: list[int]) -> list[Any]:
        from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, KafkaException, TopicPartition

        try:
            if self.timestamp is not None:
                wanted = [TopicPartition(self._topic, p, self.timestamp) for p in partitions]
                found = self._consumer.offsets_for_times(wanted, timeout=TIMEOUT_S)
                return [
                    TopicPartition(
                        self._topic, tp.partition, tp.offset if tp.offset >= 0 else OFFSET_END
                    )
                    for tp in found
                ]
            if self.offset is not None and self.offset < 0:
                starts = []
                for p in partitions:
                    low, high = self._consumer.get_watermark_offsets(
                        TopicPartition(self._topic, p), timeout=TIMEOUT_S
                    )
                    starts.append(TopicPartition(self._topic, p, max(high + self.offset, low)))
                return starts
        except KafkaException as exc:
            raise ConsumeError(f"looking up start offsets failed: {exc.args[0].str()}") from None
        start = (
            self.offset
            if self.offset is not None
            else OFFSET_BEGINNING
            if self.from_beginning
            else OFFSET_END
        )
        return [TopicPartition(self._topic, p, start) for p in partitions]


def _is_fatal(err: Any) -> bool:
    from confluent_kafka import KafkaError

    return bool(err.fatal()) or err.code() in (
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.INVALID_GROUP_ID,
    )


class _Loop:
    """Polls, prints, and decides when to stop.  Single-threaded (librdkafka calls the
    rebalance callbacks from inside ``consume``)."""

    def __init__(
        self,
        consumer: Any,
        out: BinaryIO,
        render: Callable[[Any], bytes],
        max_messages: int | None,
        exit_at_end: bool,
        signals: _Signals,
    ) -> None:
        self.consumer, self.out, self.render = consumer, out, render
        self.max_messages, self.exit_at_end, self.signals = max_messages, exit_at_end, signals
        self.printed = 0
        self.assigned: set[int] = set()
        self.at_end: set[int] = set()
        self.ever_assigned = False

    def on_assigned(self, partitions: list[int]) -> None:
        self.assigned = set(partitions)
        self.at_end &= self.assigned
        self.ever_assigned = True

    def _done(self) -> bool:
        if self.max_messages is not None and self.printed >= self.max_messages:
            return True
        return (
            self.exit_at_end
            and self.ever_assigned
            and bool(self.assigned)
            and self.assigned <= self.at_end
        )

    def run(self) -> None:
        from confluent_kafka import KafkaError

        while not self._done() and self.signals.received is None:
            wanted = (
                BATCH if self.max_messages is None else min(BATCH, self.max_messages - self.printed)
            )
            chunk = []
            for msg in self.consumer.consume(wanted, POLL_S):
                err = msg.error()
                if err is None:
                    chunk.append(self.render(msg))
                    self.at_end.discard(msg.partition())
                elif err.code() == KafkaError._PARTITION_EOF:
                    self.at_end.add(msg.partition())
                elif _is_fatal(err):
                    self._write(chunk)
                    raise ConsumeError(f"consuming failed: {err.name()}: {err.str()}")
                else:
                    click.echo(f"riverbed consume: warning: {err.str()}", err=True)
            self._write(chunk)

    def _write(self, chunk: list[bytes]) -> None:
        if chunk:
            self.out.write(b"".join(chunk))
            self.out.flush()
            self.printed += len(chunk)


@click.command("consume")
@click.argument("topic")
@click.option("--from-beginning", is_flag=True, help="Start at the log start offset.")
@click.option(
    "--offset",
    "-o",
    type=int,
    default=None,
    metavar="N",
    help="Start at offset N (negative: N records before the end).",
)
@click.option(
    "--timestamp",
    type=int,
    default=None,
    metavar="MS",
    help="Start at the first record at or after MS (epoch millis).",
)
@click.option(
    "--partition",
    "-p",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Only partition N (not with --group).",
)
@click.option(
    "--max-messages",
    "-c",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Exit after N records.",
)
@click.option(
    "--exit-at-end", "-e", is_flag=True, help="Exit once every partition has been read to its end."
)
@click.option(
    "--group",
    "-g",
    default=None,
    metavar="G",
    help="Join consumer group G and commit what was printed.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="Values (text) or one JSON object per record.",
)
@click.option("--print-key", is_flag=True, help="Text format: print KEY<TAB>VALUE.")
@click.option(
    "--key-separator",
    "-K",
    default=None,
    metavar="SEP",
    help="Text format: print KEY SEP VALUE (implies --print-key).",
)
@property_option
@bootstrap_option
def consume_command(
    topic: str,
    from_beginning: bool,
    offset: int | None,
    timestamp: int | None,
    partition: int | None,
    max_messages: int | None,
    exit_at_end: bool,
    group: str | None,
    fmt: str,
    print_key: bool,
    key_separator: str | None,
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Print records of TOPIC, one line each."""
    from confluent_kafka import Consumer

    if sum([from_beginning, offset is not None, timestamp is not None]) > 1:
        raise ConfigError("choose at most one of --from-beginning, --offset, --timestamp")
    if group is not None and partition is not None:
        raise ConfigError("--partition cannot be combined with --group")
    separator = None
    if key_separator is not None:
        separator = parse_separator(key_separator)
    elif print_key:
        separator = b"\t"
    conf: dict[str, Any] = {
        "group.id": group or ANONYMOUS_GROUP,
        "enable.auto.commit": group is not None,
        "enable.partition.eof": True,
        "auto.offset.reset": "earliest" if from_beginning else "latest",
    }
    conf.update(client_config(bootstrap, properties))
    check_reachable(bootstrap)
    signals = _Signals()
    signals.install()
    consumer = Consumer(conf)
    loop = _Loop(
        consumer, sys.stdout.buffer, _formatter(fmt, separator), max_messages, exit_at_end, signals
    )
    try:
        partitions = _partitions(consumer, topic, partition)
        start = _Start(consumer, topic, from_beginning, offset, timestamp)
        if group is None:
            consumer.assign(start.offsets(partitions))
            loop.on_assigned(partitions)
        else:
            _subscribe(consumer, topic, start, loop)
        loop.run()
    except BrokenPipeError:
        _quiet_stdout()
    finally:
        consumer.close()
    if signals.received is not None:
        sys.exit(128 + signals.received)


def _subscribe(consumer: Any, topic: str, start: _Start, loop: _Loop) -> None:
    def on_assign(c: Any, assigned: list[Any]) -> None:
        ids = [tp.partition for tp in assigned]
        if start.explicit:
            c.assign(start.offsets(ids))
        loop.on_assigned(ids)

    def on_revoke(_c: Any, revoked: list[Any]) -> None:
        loop.on_assigned([p for p in loop.assigned if p not in {tp.partition for tp in revoked}])

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)


def _quiet_stdout() -> None:
    """The reader went away (``| head``): send what Python still flushes at exit nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
