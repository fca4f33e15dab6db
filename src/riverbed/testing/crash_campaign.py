"""Crash campaign: SIGKILL a ``riverbed broker`` under producer load, cycle after cycle.

One *cycle*: producers are sending to a topic (pipelines full); after a random number of
fresh acknowledgements (``acks_per_cycle``: a random moment, measured in load rather
than in seconds so a slow machine gets the same amount of work) every producer sends one
more burst that nobody has polled for yet, serves its reports for a random 0-50 ms (so
the kill may land mid-append, responses unsent), sends a few more so records are always
in flight, and the broker is SIGKILLed and restarted on the same data dir and port. The
*same* producer objects carry on: librdkafka reconnects (within its reconnect backoff: no
re-bootstrap) and retries its in-flight batches. Every ``cycles_per_round`` cycles the
round ends: the producers flush, a consumer reads every partition from offset 0 to the
high watermark and :func:`check` compares the log with what the producers were told; the
next round uses a fresh topic and fresh producers (so memory stays bounded over 1,000
cycles). Topics use a small ``segment.bytes`` so kills also land around segment rolls.

Payloads: ``b"<producer>:<sequence>"`` padded to :data:`VALUE_SIZE` bytes, where
``<producer>`` names the application producer (mode, round, index and generation, e.g.
``I3x1.0``) and ``<sequence>`` counts its sends from 0.  A payload is never sent twice by
the application, so two copies in the log can only come from a client retry.

What each mode guarantees after a SIGKILL (docs/storage.md, "what survives a crash"): a
process crash loses nothing that was appended, under every flush policy — the data is in
the page cache once ``append`` returns, and both acks=1 (answered once appended) and
acks=all (answered after the covering fsync) answer only after that.  So in *both* modes
every acknowledged record must be in the log at the offset its delivery report named
(``lost`` = 0, ``moved`` = 0) and partitions have no gaps.  ``idempotent`` (acks=all,
``enable.idempotence``): retries of batches the broker already appended must be
recognised from the producer state rebuilt from the log, so ``duplicated`` = 0, and no
producer ever becomes fatal (``resets`` = 0) nor fails a record.  ``acks1`` (no
idempotence): a retry of a batch whose response the kill swallowed appends it again, so
duplicates are allowed and reported; un-acknowledged records may or may not be present.

How an application handles a fatal producer error (librdkafka raises one if the broker
answered a retry with OUT_OF_ORDER_SEQUENCE_NUMBER or similar): it throws the producer
away, creates a new one (a new generation in the payload's producer name) and treats the
messages that never got a delivery report as failed, without re-sending them.

Full form: ``python -m riverbed.testing.crash_campaign --cycles 1000`` (docs/reliability.md);
the CI form is tests/fault/test_crash_campaign.py.  Single-threaded; the broker is a child
process (:class:`~riverbed.testing.broker_process.BrokerProcess`) whose log is quoted on
failure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from riverbed.testing.broker_process import BrokerProcess, free_port, wait_until

MODES = ("idempotent", "acks1")
VALUE_SIZE = 64
MAX_OUTSTANDING = 20_000  # produced but not yet reported, so kills hit a full pipeline
BURST = 512  # records produced right before a kill, not yet polled for

_MODE_CONFIG: dict[str, dict[str, Any]] = {
    "idempotent": {"acks": "all", "enable.idempotence": True},
    "acks1": {"acks": "1", "enable.idempotence": False, "max.in.flight.requests.per.connection": 5},
}


def payload(producer: str, sequence: int) -> bytes:
    """``<producer>:<sequence>`` padded with dots to :data:`VALUE_SIZE` bytes."""
    return f"{producer}:{sequence:09d}".encode().ljust(VALUE_SIZE, b".")


def parse_payload(value: bytes) -> tuple[str, int]:
    """Inverse of :func:`payload`: ``(producer, sequence)``."""
    producer, _, rest = value.rstrip(b".").partition(b":")
    return producer.decode(), int(rest)


@dataclass
class ProduceLedger:
    """What the application knows: payloads acknowledged (with their offsets) and failed."""

    acked: dict[bytes, tuple[int, int]] = field(default_factory=dict)
    failed: dict[bytes, str] = field(default_factory=dict)
    fatal: list[str] = field(default_factory=list)
    sent: int = 0
    sent_by: dict[str, int] = field(default_factory=dict)  # producer name -> payloads sent

    @property
    def outstanding(self) -> int:
        return self.sent - len(self.acked) - len(self.failed)

    def on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        value, partition, offset = msg.value(), msg.partition(), msg.offset()
        assert value is not None
        if err is None:
            assert partition is not None and offset is not None
            self.acked[value] = (partition, offset)
        else:
            self.failed[value] = str(err)

    def on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.fatal.append(str(err))


class LoadProducer:
    """One producing application (see the module docstring) writing unique payloads."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, mode: str, name: str) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.mode = mode
        self.name = name
        self.ledger = ProduceLedger()
        self.resets = 0
        self._next = 0
        self.producer = self._new_producer()

    @property
    def producer_name(self) -> str:
        return f"{self.name}.{self.resets}"

    def _new_producer(self) -> Producer:
        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                **_MODE_CONFIG[self.mode],
                "linger.ms": 5,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "retry.backoff.ms": 20,
                "retry.backoff.max.ms": 200,
                "message.timeout.ms": 60_000,
                # librdkafka's default ("rebootstrap") forgets the broker when every known
                # broker is down, as each kill makes it, and only finds the partitions'
                # leader again on its 1 s leader re-query: ~1 s idle after each restart.
                # With "none" it reconnects to the same broker within the backoff above
                # and retries the in-flight batches there (same producer id, sequences).
                "metadata.recovery.strategy": "none",
                "log_level": 2,  # connection refused during every restart is expected
                "error_cb": self.ledger.on_error,
            }
        )

    def poll(self, timeout_s: float = 0.0) -> None:
        self.producer.poll(timeout_s)
        if len(self.ledger.fatal) > self.resets:
            self._reset()

    def _reset(self) -> None:
        """Fatal error: drain the old producer's reports, fail the rest, start anew."""
        self.resets += 1
        self.producer.flush(5)
        self.producer = self._new_producer()
        self._next = 0

    def produce_one(self) -> None:
        i = self._next
        value = payload(self.producer_name, i)
        while True:
            try:
                self.producer.produce(
                    self.topic,
                    value=value,
                    partition=i % self.partitions,
                    on_delivery=self.ledger.on_delivery,
                )
                break
            except BufferError:
                self.poll(0.05)
        self._next += 1
        self.ledger.sent += 1
        self.ledger.sent_by[self.producer_name] = self._next
        if i % 256 == 0:
            self.poll()

    def step(self) -> None:
        """Top the pipeline up (while under :data:`MAX_OUTSTANDING`) and serve reports."""
        if self.ledger.outstanding < MAX_OUTSTANDING:
            for _ in range(BURST):
                self.produce_one()
        self.poll(0.001)


def produce_until_acked(producers: list[LoadProducer], fresh: int, timeout_s: float) -> None:
    """Keep every pipeline full until ``fresh`` more records are acknowledged in all."""
    target = sum(len(p.ledger.acked) for p in producers) + fresh

    def step() -> None:
        for p in producers:
            p.step()

    wait_until(
        lambda: sum(len(p.ledger.acked) for p in producers) >= target,
        timeout_s,
        f"{fresh} fresh acknowledgements",
        step,
    )


def flush_all(producers: list[LoadProducer], timeout_s: float) -> None:
    def step() -> None:
        for p in producers:
            p.poll(0.05)

    wait_until(
        lambda: all(p.ledger.outstanding == 0 for p in producers),
        timeout_s,
        "every delivery report",
        step,
    )


def create_topic(
    bootstrap: str, topic: str, partitions: int, config: dict[str, str] | None = None
) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = NewTopic(topic, partitions, 1, config=config or {})
    for future in admin.create_topics([new]).values():
        future.result(30)


def read_all(
    bootstrap: str, topic: str, partitions: int, timeout_s: float
) -> dict[int, dict[int, bytes]]:
    """Every record of every partition, from offset 0 to the high watermark."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "crash-check",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    try:
        high = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        found: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        next_offset = dict.fromkeys(range(partitions), 0)

        def step() -> None:
            for msg in consumer.consume(10_000, 0.5):
                err = msg.error()
                assert err is None, err
                value, partition, offset = msg.value(), msg.partition(), msg.offset()
                assert value is not None and partition is not None and offset is not None
                found[partition][offset] = value
                next_offset[partition] = offset + 1

        wait_until(
            lambda: all(next_offset[p] >= high[p] for p in range(partitions)),
            timeout_s,
            f"the consumer to reach the high watermarks {high}",
            step,
        )
        return found
    finally:
        consumer.close()


@dataclass
class CheckReport:
    """The checker's findings for one round (counts; ``examples`` quotes a few)."""

    mode: str
    records: int = 0  # in the log
    sent: int = 0
    acked: int = 0
    failed: int = 0
    lost: int = 0  # acknowledged, not in the log
    moved: int = 0  # acknowledged, in the log at another offset than reported
    duplicated: int = 0  # extra copies of a payload
    gaps: int = 0  # missing offsets below a partition's high watermark
    unacked_present: int = 0  # failed or never reported, yet in the log
    foreign: int = 0  # records no producer of this round sent
    resets: int = 0  # producers that went fatal and were replaced
    fatal: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)

    def violations(self) -> list[str]:
        """What breaks the mode's guarantee (module docstring); empty when all holds."""
        out = [
            f"{name}={getattr(self, name)}"
            for name in ("lost", "moved", "gaps", "foreign")
            if getattr(self, name)
        ]
        if self.mode == "idempotent":
            out += [
                f"{name}={getattr(self, name)}"
                for name in ("duplicated", "resets", "failed")
                if getattr(self, name)
            ]
        return out


def check(
    mode: str, found: dict[int, dict[int, bytes]], ledgers: list[ProduceLedger], resets: int = 0
) -> CheckReport:
    """Compare what the log holds with what the producers were told."""
    report = CheckReport(mode=mode, resets=resets)
    locations: dict[bytes, list[tuple[int, int]]] = {}
    for partition, records in found.items():
        report.records += len(records)
        if records:
            report.gaps += max(records) + 1 - len(records)
        for offset, value in records.items():
            locations.setdefault(value, []).append((partition, offset))
    for ledger in ledgers:
        report.sent += ledger.sent
        report.acked += len(ledger.acked)
        report.failed += len(ledger.failed)
        report.fatal += ledger.fatal[:3]
        for value, at in ledger.acked.items():
            where = locations.get(value)
            if not where:
                report.lost += 1
                _example(report, f"lost {parse_payload(value)} acked at {at}")
            elif at not in where:
                report.moved += 1
                _example(report, f"moved {parse_payload(value)} acked at {at}, found at {where}")
    acked = {value for ledger in ledgers for value in ledger.acked}
    for value, where in locations.items():
        report.duplicated += len(where) - 1
        if len(where) > 1:
            _example(report, f"duplicated {parse_payload(value)} at {where}")
        if value in acked:
            continue
        try:
            name, sequence = parse_payload(value)
        except ValueError:
            name, sequence = "", -1
        if 0 <= sequence < next_sequence(ledgers, name):
            report.unacked_present += 1  # failed, or never reported (fatal producer)
        else:
            report.foreign += 1
            _example(report, f"foreign record {value[:32]!r} at {where}")
    return report


def next_sequence(ledgers: list[ProduceLedger], name: str) -> int:
    """How many payloads producer ``name`` sent (0 for a name no producer used)."""
    return max((ledger.sent_by.get(name, 0) for ledger in ledgers), default=0)


def _example(report: CheckReport, text: str) -> None:
    if len(report.examples) < 5:
        report.examples.append(text)


@dataclass
class CampaignConfig:
    mode: str = "idempotent"
    cycles: int = 10
    cycles_per_round: int = 10
    producers: int = 2
    partitions: int = 3
    acks_per_cycle: tuple[int, int] = (1_000, 6_000)  # fresh acks before each kill
    final_messages: int = 2_000  # per producer, after a round's last restart
    segment_bytes: int | None = 1 << 20
    seed: int | None = None
    max_kill_delay_s: float = 0.05  # after the last burst, before the kill
    timeout_s: float = 90.0  # for each wait (acks, flush, read-back)


@dataclass
class Kill:
    round: int
    acked: int  # acknowledgements so far in this round
    outstanding: int  # produced, not yet reported, at the kill
    restart_s: float  # SIGKILL to accepting connections again


@dataclass
class CampaignResult:
    config: CampaignConfig
    seed: int
    kills: list[Kill] = field(default_factory=list)
    reports: list[CheckReport] = field(default_factory=list)
    elapsed_s: float = 0.0

    def violations(self) -> list[str]:
        return [f"round {i}: {v}" for i, r in enumerate(self.reports) for v in r.violations()]

    def totals(self) -> dict[str, int]:
        keys = (
            "records",
            "sent",
            "acked",
            "failed",
            "lost",
            "moved",
            "duplicated",
            "gaps",
            "unacked_present",
            "foreign",
            "resets",
        )
        return {k: sum(getattr(r, k) for r in self.reports) for k in keys}

    def summary(self) -> dict[str, Any]:
        restarts = sorted(k.restart_s for k in self.kills)
        return {
            "mode": self.config.mode,
            "seed": self.seed,
            "cycles": len(self.kills),
            "rounds": len(self.reports),
            "elapsed_s": round(self.elapsed_s, 1),
            "kills_with_records_in_flight": sum(k.outstanding > 0 for k in self.kills),
            "restart_s_median": round(restarts[len(restarts) // 2], 2) if restarts else None,
            "restart_s_max": round(restarts[-1], 2) if restarts else None,
            **self.totals(),
            "violations": self.violations()[:20],
        }


def run_campaign(
    work_dir: Path,
    config: CampaignConfig,
    progress: Callable[[str], None] | None = None,
    broker: BrokerProcess | None = None,
) -> CampaignResult:
    """Run ``config.cycles`` kill/restart cycles in ``work_dir`` (see the module docstring).

    Raises AssertionError (with the broker log's tail) when a wait times out; guarantee
    violations are *returned* in the result's reports, for the caller to judge.
    """
    seed = config.seed if config.seed is not None else random.randrange(1 << 32)
    rng = random.Random(seed)
    result = CampaignResult(config=config, seed=seed)
    if broker is None:
        broker = BrokerProcess(work_dir / "data", free_port(), work_dir / "broker.log")
    started = time.monotonic()
    topic_config = (
        {} if config.segment_bytes is None else {"segment.bytes": str(config.segment_bytes)}
    )
    try:
        broker.start()
        done = 0
        round_no = 0
        while done < config.cycles:
            cycles = min(config.cycles_per_round, config.cycles - done)
            topic = "crash" if round_no == 0 else f"crash-{round_no}"
            create_topic(broker.bootstrap_servers, topic, config.partitions, topic_config)
            tag = "I" if config.mode == "idempotent" else "A"
            producers = [
                LoadProducer(
                    broker.bootstrap_servers,
                    topic,
                    config.partitions,
                    config.mode,
                    f"{tag}{round_no}x{i}",
                )
                for i in range(config.producers)
            ]
            try:
                for _ in range(cycles):
                    produce_until_acked(
                        producers, rng.randint(*config.acks_per_cycle), config.timeout_s
                    )
                    # Reaching the target can drain the pipelines; a fresh burst, not yet
                    # polled for, guarantees the kill lands with records in flight.
                    for p in producers:
                        for _ in range(BURST):
                            p.produce_one()
                    # Then a random few milliseconds for the burst to reach the broker, so
                    # the kill also lands mid-request (appended, response not yet sent).
                    pause_until = time.monotonic() + rng.uniform(0.0, config.max_kill_delay_s)
                    while time.monotonic() < pause_until:
                        for p in producers:
                            p.producer.poll(0.001)
                    for p in producers:  # and records in flight even if the pipes drained
                        for _ in range(BURST // 8):
                            p.produce_one()
                    kill = Kill(
                        round=round_no,
                        acked=sum(len(p.ledger.acked) for p in producers),
                        outstanding=sum(p.ledger.outstanding for p in producers),
                        restart_s=0.0,
                    )
                    broker.kill()
                    t0 = time.monotonic()
                    broker.start()
                    kill.restart_s = time.monotonic() - t0
                    result.kills.append(kill)
                    done += 1
                for p in producers:
                    for _ in range(config.final_messages):
                        p.produce_one()
                flush_all(producers, config.timeout_s)
                for p in producers:
                    p.producer.flush(10)
            finally:
                for p in producers:
                    p.producer.flush(0)
            found = read_all(broker.bootstrap_servers, topic, config.partitions, config.timeout_s)
            report = check(
                config.mode,
                found,
                [p.ledger for p in producers],
                resets=sum(p.resets for p in producers),
            )
            result.reports.append(report)
            if progress is not None:
                progress(
                    f"{config.mode} round {round_no}: {done}/{config.cycles} cycles, "
                    f"{report.records} records, lost={report.lost} moved={report.moved} "
                    f"duplicated={report.duplicated} gaps={report.gaps}"
                )
            round_no += 1
    except Exception as exc:
        raise AssertionError(
            f"seed={seed} kills={len(result.kills)}: {exc}\n{broker.tail()}"
        ) from exc
    finally:
        broker.close()
        result.elapsed_s = time.monotonic() - started
    return result


def _counter_line(result: CampaignResult) -> str:
    counts = Counter({k: v for k, v in result.totals().items() if v})
    return " ".join(f"{k}={v}" for k, v in sorted(counts.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m riverbed.testing.crash_campaign",
        description="SIGKILL a riverbed broker under producer load, cycle after cycle, and "
        "check that no acknowledged record is lost, moved or (idempotent) "
        "duplicated. Exit status 1 if any guarantee is violated.",
    )
    parser.add_argument(
        "--cycles",
        type=int,
        default=1000,
        help="kill/restart cycles in all, split evenly between the modes",
    )
    parser.add_argument("--mode", choices=[*MODES, "both"], default="both")
    parser.add_argument(
        "--cycles-per-round",
        type=int,
        default=10,
        help="cycles between read-back checks (each round: a fresh topic)",
    )
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument(
        "--acks-per-cycle", type=int, nargs=2, default=(1_000, 6_000), metavar=("MIN", "MAX")
    )
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="where data dirs and broker logs go (default: a new temp dir)",
    )
    args = parser.parse_args(argv)
    modes = list(MODES) if args.mode == "both" else [args.mode]
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="riverbed-crash-"))
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"work dir {work}, seed {seed}, load {os.getloadavg()}", flush=True)
    failed = False
    for i, mode in enumerate(modes):
        cycles = args.cycles // len(modes) + (1 if i < args.cycles % len(modes) else 0)
        mode_dir = work / mode
        mode_dir.mkdir(parents=True, exist_ok=True)
        config = CampaignConfig(
            mode=mode,
            cycles=cycles,
            cycles_per_round=args.cycles_per_round,
            producers=args.producers,
            acks_per_cycle=tuple(args.acks_per_cycle),
            seed=seed + i,
        )
        result = run_campaign(mode_dir, config, progress=lambda s: print(s, flush=True))
        print(json.dumps(result.summary()), flush=True)
        print(f"{mode}: {_counter_line(result)}", flush=True)
        if result.violations():
            failed = True
            for report in result.reports:
                if report.violations():
                    print(json.dumps(asdict(report)), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
