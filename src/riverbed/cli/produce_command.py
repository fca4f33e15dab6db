"""``riverbed produce TOPIC``: one record per line of stdin, like ``kcat -P``.

Input is read as bytes (binary-safe except for the newline byte, which ends a record):
each line, without its trailing ``\\n``, is one record's value.  Empty lines are skipped,
as kcat does.  With ``--key-separator SEP`` (``kcat -K``) a line is split at the *first*
SEP into key and value; a line without SEP is produced with a null key and the whole line
as value (kcat's behaviour).  SEP accepts backslash escapes (``'\\t'``, ``'\\x1f'``).
Every ``--header K=V`` is attached to every record (repeatable; repeated keys are kept).

Records go to ``--partition N`` when given, else librdkafka's default partitioner (a hash
of the key; null keys spread).  The producer is idempotent with ``acks=all`` (so retries
neither duplicate nor reorder lines) unless ``--property`` says otherwise, and waits up to
``message.timeout.ms`` (60 s here) per record.

Exit codes: 0 every record acknowledged (the producer is flushed at the end); 1 a record
was refused or timed out -- stdin is not read further, what was sent is flushed, and one
line names the first error and how many records were not delivered; 2 a usage mistake;
130 Ctrl-C (records already handed to the client are flushed for up to 5 s first).

A topic that does not exist is auto-created when the broker allows it: its Metadata starts
the creation and answers the topic unknown (Kafka 4.x, and Riverbed), so the check asks
again for up to :data:`AUTO_CREATE_WAIT_S` before it reports the topic not available.

Works against any Kafka cluster: confluent-kafka's Producer only, after the shared
reachability check of :mod:`riverbed.cli.kafka_admin`.
"""

from __future__ import annotations

import codecs
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import click

from riverbed.cli.kafka_admin import (
    TIMEOUT_S,
    bootstrap_option,
    check_reachable,
    client_config,
    property_option,
)
from riverbed.errors import ConfigError, RiverbedError

INTERRUPT_FLUSH_S = 5.0


class ProduceError(RiverbedError):
    """``riverbed produce`` could not deliver (message is for the user)."""


def parse_separator(text: str, option: str = "--key-separator") -> bytes:
    """``text`` with backslash escapes decoded, as bytes (``'\\t'`` -> ``b'\\t'``)."""
    try:
        separator: bytes = codecs.escape_decode(text.encode("utf-8"))[0]
    except ValueError as exc:
        raise ConfigError(f"{option} {text!r}: {exc}") from None
    if not separator:
        raise ConfigError(f"{option} must not be empty")
    return separator


def parse_headers(pairs: tuple[str, ...]) -> list[tuple[str, str | bytes | None]]:
    headers: list[tuple[str, str | bytes | None]] = []
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ConfigError(f"--header {pair!r} is not K=V")
        headers.append((key, value.encode("utf-8")))
    return headers


def split_line(line: bytes, separator: bytes | None) -> tuple[bytes | None, bytes]:
    """(key, value) of one input line (without its newline), kcat's ``-K`` rules."""
    if separator is None:
        return None, line
    key, sep, value = line.partition(separator)
    return (key, value) if sep else (None, line)


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    for raw in stream:
        line = raw[:-1] if raw.endswith(b"\n") else raw
        if line:
            yield line


AUTO_CREATE_WAIT_S = 5.0
"""How long an unknown topic is asked for again (Metadata auto-creates it in the background)."""


@dataclass
class _Deliveries:
    """Delivery reports, filled by librdkafka callbacks on the producing thread."""

    acknowledged: int = 0
    failed: int = 0
    first_error: str | None = field(default=None)

    def report(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acknowledged += 1
            return
        self.failed += 1
        if self.first_error is None:
            where = f"{msg.topic()} [{msg.partition()}]" if msg is not None else "?"
            self.first_error = f"{where}: {err.name()}: {err.str()}"


def _check_topic(producer: Any, topic: str, partition: int | None) -> None:
    from confluent_kafka import KafkaError, KafkaException

    deadline = time.monotonic() + AUTO_CREATE_WAIT_S
    while True:
        try:
            metadata = producer.list_topics(topic, timeout=TIMEOUT_S).topics.get(topic)
        except KafkaException as exc:
            raise ProduceError(f"reading metadata of {topic} failed: {exc.args[0].str()}") from None
        error = metadata.error if metadata is not None else None
        unknown = error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
        if not unknown or time.monotonic() >= deadline:
            break
        time.sleep(0.1)  # being auto-created (if the broker allows it): ask again
    if metadata is None or (
        error is not None
        and error.code()
        in (
            KafkaError.UNKNOWN_TOPIC_OR_PART,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.TOPIC_EXCEPTION,
        )
    ):
        reason = error.str() if error is not None else "no metadata"
        raise ProduceError(f"topic {topic} is not available: {reason}")
    count = len(metadata.partitions)
    if partition is not None and count and partition >= count:
        raise ProduceError(
            f"topic {topic} has {count} partition(s); --partition {partition} does not exist"
        )


@click.command("produce")
@click.argument("topic")
@click.option(
    "--key-separator",
    "-K",
    default=None,
    metavar="SEP",
    help="Split each line at the first SEP into key and value (no SEP: null key).",
)
@click.option(
    "--partition",
    "-p",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Produce to partition N (default: the partitioner picks).",
)
@click.option(
    "--header",
    "-H",
    "header_pairs",
    multiple=True,
    metavar="K=V",
    help="A header on every record (repeatable).",
)
@property_option
@bootstrap_option
def produce_command(
    topic: str,
    key_separator: str | None,
    partition: int | None,
    header_pairs: tuple[str, ...],
    properties: tuple[str, ...],
    bootstrap: str,
) -> None:
    """Produce one record per line of stdin to TOPIC."""
    from confluent_kafka import KafkaException, Producer

    separator = parse_separator(key_separator) if key_separator is not None else None
    headers = parse_headers(header_pairs) or None
    conf: dict[str, Any] = {
        "enable.idempotence": True,
        "acks": "all",
        "message.timeout.ms": 60_000,
        "linger.ms": 5,
    }
    conf.update(client_config(bootstrap, properties))  # --property wins
    check_reachable(bootstrap)
    producer = Producer(conf)
    _check_topic(producer, topic, partition)
    deliveries = _Deliveries()
    extra: dict[str, Any] = {} if partition is None else {"partition": partition}
    sent = 0
    try:
        for line in _lines(sys.stdin.buffer):
            key, value = split_line(line, separator)
            while True:
                try:
                    producer.produce(
                        topic, value, key, headers=headers, on_delivery=deliveries.report, **extra
                    )
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    producer.poll(0.1)
                except KafkaException as exc:
                    raise ProduceError(
                        f"producing to {topic} failed: {exc.args[0].str()}"
                    ) from None
            sent += 1
            producer.poll(0)
            if deliveries.first_error is not None:
                break
        producer.flush()
    except KeyboardInterrupt:
        left = producer.flush(INTERRUPT_FLUSH_S)
        click.echo(
            f"riverbed produce: interrupted; {deliveries.acknowledged} record(s) "
            f"acknowledged, {left} still in flight",
            err=True,
        )
        sys.exit(130)
    if deliveries.first_error is not None:
        missing = sent - deliveries.acknowledged
        raise ProduceError(
            f"{missing} of {sent} record(s) not delivered; first error: {deliveries.first_error}"
        )
