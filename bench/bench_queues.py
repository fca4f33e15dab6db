"""Work queues: a Kafka share group (KIP-932) next to RabbitMQ, same scenario, same box.

Peers (``--peers``, default ``riverbed,kafka,rabbitmq``):

* ``riverbed``: a share group on a ``riverbed broker`` child process started privately on a
  temporary data dir (acquisition lock ``--lock-ms``);
* ``kafka``: a share group on Apache Kafka 4.4.0 started privately
  (``riverbed.testing.kafka_share_reference``, acquisition lock ``--lock-ms``);
* ``share``: a share group on ``--bootstrap-server`` (any running cluster with share groups);
* ``rabbitmq``: Debian's RabbitMQ 3.10 started privately on free ports
  (``bench/rabbitmq_private.py``), through ``pika``.

Scenario, per message size (``--sizes``, default 100 and 1024 bytes), one run per peer:

* **throughput**: ``--consumers`` (default 4) consumer *processes* wait on an empty queue
  (share groups: a fresh topic with ``--partitions`` partitions and a fresh share group,
  ``share.auto.offset.reset=earliest``; ``rabbitmq``: a fresh durable classic queue,
  ``basic_qos(prefetch_count=--prefetch)``).  A warm-up of 200 messages is drained first so
  every consumer has joined.  Then one producer (this process) sends ``--messages``
  durable messages (share groups: confluent-kafka ``acks=all``, idempotent, ``linger.ms=5``;
  ``rabbitmq``: ``delivery_mode=2`` with asynchronous publisher confirms, at most 1,000
  unconfirmed) while the consumers acknowledge each message on its own (share groups:
  explicit ``acknowledge(ACCEPT)`` per record, sent with the next poll; ``rabbitmq``:
  ``basic_ack`` per delivery, ``multiple=False``).  Timed from the first send to the last
  acknowledgement issued by a consumer: messages/s end to end.  The producer's own time
  (until every send is confirmed) is printed too.
* **redelivery after a consumer crash**: one consumer receives a message and exits at once
  (``os._exit``: no ack, its TCP connection closed by the kernel); a second consumer,
  connected before, starts consuming right then.  Timed from the crash to the second
  consumer's delivery of that message (``delivery_count`` 2 / ``redelivered``).  A share
  group hands the record back when its acquisition lock expires (``--lock-ms`` for the
  private brokers, the cluster's ``group.share.record.lock.duration.ms`` for ``share``;
  Kafka's default is 30 s) or, in Kafka 4.4, when it sees the consumer's connection close;
  RabbitMQ requeues when it sees the connection close.

Runs alternate between the peers (their order reversed every other round) ``--repeat``
times (default 5); medians are printed with the load average before and after, and the
ratio of each share group to RabbitMQ (above 1: the share group is faster).

Run::

    .venv/bin/python bench/bench_queues.py                         # Riverbed, Kafka 4.4, RabbitMQ
    .venv/bin/python bench/bench_queues.py --peers share,rabbitmq --bootstrap-server HOST:PORT
    .venv/bin/python bench/bench_queues.py --repeat 1 --messages 2000  # a quick look

Needs ``apt-get install rabbitmq-server`` and the dev extra (``pika``) for the RabbitMQ peer.
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

WARMUP = 200
DEADLINE_S = 300.0
_ctx = mp.get_context("spawn")


@dataclass(frozen=True, slots=True)
class Result:
    peer: str
    what: str  # "100B", "1024B", "crash"
    value: float  # messages/s, or seconds of redelivery delay
    producer_s: float = 0.0


# -- share group (Kafka protocol) --------------------------------------------------------


def _share_setup(bootstrap: str, partitions: int) -> tuple[str, str]:
    from riverbed.testing.kafka_share_reference import create_topic, set_share_group_config

    name = uuid.uuid4().hex[:10]
    topic, group = f"bench-q-{name}", f"bench-g-{name}"
    create_topic(bootstrap, topic, partitions)
    set_share_group_config(bootstrap, group, {"share.auto.offset.reset": "earliest"})
    return topic, group


def _share_consumer(
    bootstrap: str, group: str, topic: str, counter: Any, stop: Any, ready: Any
) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    ready.release()
    while not stop.is_set():
        n = 0
        for message in consumer.poll(0.2):
            if message.error() is None:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                n += 1
        if n:
            with counter.get_lock():
                counter.value += n
    consumer.commit_sync(30)
    consumer.close()


def _share_produce(bootstrap: str, topic: str, count: int, size: int) -> float:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.num.messages": 10_000,
        }
    )
    payload = b"x" * size
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, payload)
                break
            except BufferError:
                producer.poll(0.01)
        producer.poll(0)
    if producer.flush(DEADLINE_S) != 0:
        raise RuntimeError("producer did not deliver everything")
    return time.perf_counter() - start


def _share_crasher(bootstrap: str, group: str, topic: str, crashed_at: Any) -> None:
    from confluent_kafka import ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    while True:
        if any(m.error() is None for m in consumer.poll(0.1)):
            crashed_at.value = time.time()
            os._exit(9)


def _share_survivor(
    bootstrap: str, group: str, topic: str, ready: Any, go: Any, redelivered_at: Any
) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    consumer = ShareConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "share.acknowledgement.mode": "explicit",
        }
    )
    consumer.subscribe([topic])
    consumer.poll(1.0)  # joins the group; the topic is still empty
    ready.release()
    go.wait(DEADLINE_S)
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        for message in consumer.poll(0.05):
            if message.error() is None:
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                if (message.delivery_count() or 1) >= 2:
                    redelivered_at.value = time.time()
                    consumer.commit_sync(30)
                    consumer.close()
                    return


# -- RabbitMQ ------------------------------------------------------------------------------


def _rabbit_setup(url: str) -> str:
    import pika

    queue = f"bench-{uuid.uuid4().hex[:10]}"
    with contextlib.closing(pika.BlockingConnection(pika.URLParameters(url))) as conn:
        conn.channel().queue_declare(queue, durable=True)
    return queue


def _rabbit_consumer(
    url: str, queue: str, prefetch: int, counter: Any, stop: Any, ready: Any
) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    channel = conn.channel()
    channel.basic_qos(prefetch_count=prefetch)
    pending = [0]

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        ch.basic_ack(method.delivery_tag)
        pending[0] += 1
        if pending[0] >= 100:
            with counter.get_lock():
                counter.value += pending[0]
            pending[0] = 0

    channel.basic_consume(queue, on_message)
    ready.release()
    while not stop.is_set():
        conn.process_data_events(time_limit=0.05)
        if pending[0]:
            with counter.get_lock():
                counter.value += pending[0]
            pending[0] = 0
    conn.close()


def _rabbit_produce(url: str, queue: str, count: int, size: int, window: int = 1000) -> float:
    """Publish ``count`` persistent messages with asynchronous publisher confirms."""
    import pika

    payload = b"x" * size
    properties = pika.BasicProperties(delivery_mode=2)
    state = {"sent": 0, "confirmed": 0, "start": 0.0, "end": 0.0, "error": ""}
    conn: Any = None

    def publish_more(channel: Any) -> None:
        while state["sent"] < count and state["sent"] - state["confirmed"] < window:
            channel.basic_publish("", queue, payload, properties)
            state["sent"] += 1

    def on_confirm(frame: Any) -> None:
        method = frame.method
        if isinstance(method, pika.spec.Basic.Nack):
            state["error"] = "nack from the broker"
        tag = method.delivery_tag
        if method.multiple:
            state["confirmed"] = tag
        else:
            state["confirmed"] = max(state["confirmed"], tag)
        if state["confirmed"] >= count:
            state["end"] = time.perf_counter()
            conn.close()
        else:
            publish_more(channel_ref[0])

    channel_ref: list[Any] = []

    def on_confirm_ok(frame: Any) -> None:
        state["start"] = time.perf_counter()
        publish_more(channel_ref[0])

    def on_channel(channel: Any) -> None:
        channel_ref.append(channel)
        channel.add_on_return_callback(lambda *a: None)
        channel.confirm_delivery(on_confirm, callback=on_confirm_ok)

    def on_open(connection: Any) -> None:
        connection.channel(on_open_callback=on_channel)

    conn = pika.SelectConnection(
        pika.URLParameters(url),
        on_open_callback=on_open,
        on_close_callback=lambda c, reason: c.ioloop.stop(),
    )
    conn.ioloop.start()
    if state["error"] or not state["end"]:
        raise RuntimeError(f"publishing failed: {state['error'] or 'connection closed'}")
    return float(state["end"]) - float(state["start"])


def _rabbit_crasher(url: str, queue: str, crashed_at: Any) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    channel = conn.channel()
    channel.basic_qos(prefetch_count=1)

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        crashed_at.value = time.time()
        os._exit(9)

    channel.basic_consume(queue, on_message)
    channel.start_consuming()


def _rabbit_survivor(url: str, queue: str, ready: Any, go: Any, redelivered_at: Any) -> None:
    import pika

    conn = pika.BlockingConnection(pika.URLParameters(url))
    channel = conn.channel()
    channel.basic_qos(prefetch_count=1)
    ready.release()
    go.wait(DEADLINE_S)

    def on_message(ch: Any, method: Any, properties: Any, body: bytes) -> None:
        ch.basic_ack(method.delivery_tag)
        if method.redelivered:
            redelivered_at.value = time.time()
            ch.stop_consuming()

    channel.basic_consume(queue, on_message)
    channel.start_consuming()
    conn.close()


def _rabbit_publish_one(url: str, queue: str) -> None:
    import pika

    with contextlib.closing(pika.BlockingConnection(pika.URLParameters(url))) as conn:
        channel = conn.channel()
        channel.confirm_delivery()
        channel.basic_publish("", queue, b"job", pika.BasicProperties(delivery_mode=2))


# -- one run -------------------------------------------------------------------------------


def _wait_count(counter: Any, target: int, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while counter.value < target:
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out: {what} ({counter.value}/{target})")
        time.sleep(0.002)


def throughput_run(peer: str, address: str, size: int, args: argparse.Namespace) -> Result:
    counter, stop = _ctx.Value("q", 0), _ctx.Event()
    ready = _ctx.Semaphore(0)
    if peer != "rabbitmq":
        topic, group = _share_setup(address, args.partitions)
        target: Any = _share_consumer
        cargs: tuple[Any, ...] = (address, group, topic)

        def produce(n: int) -> float:
            return _share_produce(address, topic, n, size)
    else:
        queue = _rabbit_setup(address)
        target = _rabbit_consumer
        cargs = (address, queue, args.prefetch)

        def produce(n: int) -> float:
            return _rabbit_produce(address, queue, n, size)

    procs = [
        _ctx.Process(target=target, args=(*cargs, counter, stop, ready), daemon=True)
        for _ in range(args.consumers)
    ]
    for p in procs:
        p.start()
    try:
        for _ in procs:
            if not ready.acquire(timeout=DEADLINE_S):
                raise RuntimeError("a consumer did not start")
        produce(WARMUP)
        _wait_count(counter, WARMUP, "warm-up")
        start = time.perf_counter()
        producer_s = produce(args.messages)
        _wait_count(counter, WARMUP + args.messages, "consuming")
        elapsed = time.perf_counter() - start
    finally:
        stop.set()
        for p in procs:
            p.join(60)
            if p.is_alive():
                p.kill()
    return Result(peer, f"{size}B", args.messages / elapsed, producer_s)


def crash_run(peer: str, address: str) -> Result:
    crashed_at, redelivered_at = _ctx.Value("d", 0.0), _ctx.Value("d", 0.0)
    ready, go = _ctx.Semaphore(0), _ctx.Event()
    if peer != "rabbitmq":
        topic, group = _share_setup(address, 1)
        survivor = _ctx.Process(
            target=_share_survivor, args=(address, group, topic, ready, go, redelivered_at)
        )
        crasher = _ctx.Process(target=_share_crasher, args=(address, group, topic, crashed_at))

        def publish() -> None:
            _share_produce(address, topic, 1, 100)
    else:
        queue = _rabbit_setup(address)
        survivor = _ctx.Process(
            target=_rabbit_survivor, args=(address, queue, ready, go, redelivered_at)
        )
        crasher = _ctx.Process(target=_rabbit_crasher, args=(address, queue, crashed_at))

        def publish() -> None:
            _rabbit_publish_one(address, queue)

    survivor.start()
    try:
        if not ready.acquire(timeout=DEADLINE_S):
            raise RuntimeError("the survivor did not start")
        crasher.start()
        time.sleep(0)  # the crasher subscribes; the message may arrive before or after
        publish()
        crasher.join(DEADLINE_S)
        if crasher.exitcode != 9:
            raise RuntimeError(f"the crasher did not crash (exit {crasher.exitcode})")
        go.set()
        survivor.join(DEADLINE_S)
        if not redelivered_at.value:
            raise RuntimeError("no redelivery seen")
    finally:
        for p in (crasher, survivor):
            if p.is_alive():
                p.kill()
    return Result(peer, "crash", redelivered_at.value - crashed_at.value)


# -- peers and report ----------------------------------------------------------------------


@contextlib.contextmanager
def kafka_peer(args: argparse.Namespace) -> Iterator[str]:
    from riverbed.testing.kafka_share_reference import share_kafka

    with share_kafka(lock_duration_ms=args.lock_ms, overrides={"num.partitions": "4"}) as kafka:
        yield kafka.bootstrap_servers


@contextlib.contextmanager
def riverbed_peer(args: argparse.Namespace) -> Iterator[str]:
    import tempfile
    from pathlib import Path

    from riverbed.testing.broker_process import BrokerProcess, free_port

    with tempfile.TemporaryDirectory(prefix="riverbed-bench-queues-") as tmp:
        root = Path(tmp)
        config = {"group.share.record.lock.duration.ms": str(args.lock_ms)}
        broker = BrokerProcess(root / "data", free_port(), root / "broker.log", config)
        broker.start(timeout_s=180)
        try:
            yield broker.bootstrap_servers
        finally:
            broker.close()


@contextlib.contextmanager
def rabbit_peer() -> Iterator[str]:
    from rabbitmq_private import RabbitNode

    with RabbitNode() as node:
        yield node.url


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092", help="peer share")
    parser.add_argument("--lock-ms", type=int, default=5_000, help="private brokers' lock")
    parser.add_argument("--peers", default="riverbed,kafka,rabbitmq")
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--consumers", type=int, default=4)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--prefetch", type=int, default=100, help="RabbitMQ basic_qos")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-crash", action="store_true", help="skip the redelivery runs")
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"before: {_load()}", flush=True)
    results: list[Result] = []
    with contextlib.ExitStack() as stack:
        address = {}
        if "share" in peers:
            address["share"] = args.bootstrap_server
        if "riverbed" in peers:
            address["riverbed"] = stack.enter_context(riverbed_peer(args))
        if "kafka" in peers:
            address["kafka"] = stack.enter_context(kafka_peer(args))
        if "rabbitmq" in peers:
            address["rabbitmq"] = stack.enter_context(rabbit_peer())
        for i in range(args.repeat):
            order = peers if i % 2 == 0 else peers[::-1]
            for size in sizes:
                for peer in order:
                    r = throughput_run(peer, address[peer], size, args)
                    print(
                        f"run {i + 1} {peer:8} {size:5} B: {r.value:10,.0f} msg/s end to end "
                        f"(producer {args.messages / r.producer_s:,.0f} msg/s)",
                        flush=True,
                    )
                    results.append(r)
            if not args.no_crash:
                for peer in order:
                    r = crash_run(peer, address[peer])
                    print(f"run {i + 1} {peer:8} redelivery after crash: {r.value:.3f} s")
                    results.append(r)
    print(f"after: {_load()}")
    print(
        f"medians of {args.repeat} ({args.messages} messages, {args.consumers} consumers, "
        f"per-message ack, durable):"
    )
    whats = [f"{s}B" for s in sizes] + ([] if args.no_crash else ["crash"])
    for what in whats:
        row = {}
        for peer in peers:
            values = [r.value for r in results if r.peer == peer and r.what == what]
            row[peer] = statistics.median(values)
        unit = "s redelivery delay" if what == "crash" else "msg/s"
        cells = "  ".join(
            f"{p} {v:,.3f}" if what == "crash" else f"{p} {v:,.0f}" for p, v in row.items()
        )
        ratio = ""
        if what != "crash" and "rabbitmq" in row:
            ratio = "".join(
                f"  {p}/rabbitmq {v / row['rabbitmq']:.2f}x"
                for p, v in row.items()
                if p != "rabbitmq"
            )
        print(f"  {what:6} {unit}: {cells}{ratio}")


if __name__ == "__main__":
    main()
