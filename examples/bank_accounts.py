"""The bank accounts example end to end, against any Kafka cluster with transactions.

    python examples/bank_accounts.py --bootstrap-server HOST:PORT [--commands 2000] [--threads 4]
    python examples/bank_accounts.py --embedded        # starts a Riverbed broker in-process

Creates the ``bank<random>`` topics, starts one writer thread, sends deposits, withdrawals
and transfers from client threads, waits for every reply, then checks that the replay from
offset 0 equals the snapshots and the SQLite balances projection, and prints the figures
(commands decided per second, reply latency p50/p99), measured after a warm-up deposit to
every account (the writer's group assignment and partition loads are not counted).
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import threading
import time
import uuid
from concurrent.futures import Future
from pathlib import Path

from riverbed.eventsourcing import (
    AppTopics,
    CommandClient,
    CommandWriter,
    Reply,
    all_snapshots,
    create_topics,
    replay,
)
from riverbed.eventsourcing.bank import BankAccount, balances_projection


def workload(bootstrap: str, commands: int, threads: int, workdir: Path) -> None:
    config = {"bootstrap.servers": bootstrap}
    topics = AppTopics(f"bank{uuid.uuid4().hex[:6]}")
    create_topics(config, topics, partitions=3)
    stop = threading.Event()
    ready = threading.Event()
    writer = CommandWriter(config, topics, BankAccount(), writer_id="example")
    writer_thread = threading.Thread(
        target=writer.run, args=(stop,), kwargs={"on_ready": ready.set}
    )
    writer_thread.start()
    ready.wait(120)
    accounts = [f"acct-{n}" for n in range(20)]
    latencies: list[float] = []
    rejected = 0
    lock = threading.Lock()

    def client_thread(seed: int, count: int) -> None:
        nonlocal rejected
        rng = random.Random(seed)
        with CommandClient(config, topics) as client:
            pending: list[tuple[float, Future[Reply]]] = []
            for _ in range(count):
                account = rng.choice(accounts)
                kind = rng.choice(["Deposit", "Deposit", "Withdraw", "Transfer"])
                data: dict[str, object] = {"amount": rng.randint(1, 100)}
                if kind == "Transfer":
                    data["to"] = rng.choice([a for a in accounts if a != account])
                pending.append((time.perf_counter(), client.send(account, kind, data)))
                if len(pending) >= 50:
                    drain(pending)
            drain(pending)

    def drain(pending: list[tuple[float, Future[Reply]]]) -> None:
        nonlocal rejected
        for started, future in pending:
            reply = future.result(timeout=300)
            with lock:
                latencies.append(time.perf_counter() - started)
                rejected += not reply.ok
        pending.clear()

    with CommandClient(config, topics) as warm_up:  # group assignment, partition loads
        for future in [warm_up.send(a, "Deposit", {"amount": 1}) for a in accounts]:
            future.result(timeout=300)
    started = time.perf_counter()
    workers = [
        threading.Thread(target=client_thread, args=(seed, commands // threads))
        for seed in range(threads)
    ]
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    elapsed = time.perf_counter() - started
    stop.set()
    writer_thread.join(60)
    replayed = replay(config, topics, BankAccount())
    snapshots = {a: (s.version, s.state) for a, s in all_snapshots(config, topics).items()}
    projection = balances_projection(workdir / "balances.db", config, topics.app)
    projection.catch_up()
    rows = projection.conn.execute("SELECT account, balance, version FROM balances").fetchall()
    projection.close()
    projected = {a: (v, {"balance": b}) for a, b, v in rows}
    # transfers' credits may still be in flight when the writer stopped: compare what exists
    assert replayed == snapshots == projected, "replay, snapshots and projection differ"
    latencies.sort()
    print(
        f"{len(latencies)} commands in {elapsed:.2f} s = {len(latencies) / elapsed:,.0f} "
        f"commands/s ({rejected} rejected), reply latency p50 "
        f"{statistics.median(latencies) * 1000:.1f} ms, p99 "
        f"{latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms, "
        f"{writer.committed_batches} transactions; replay == snapshots == projection"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap-server")
    parser.add_argument("--embedded", action="store_true")
    parser.add_argument("--commands", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.embedded:
            from riverbed.testing.embedded import EmbeddedBroker

            with EmbeddedBroker(Path(tmp) / "broker") as broker:
                workload(broker.bootstrap_servers, args.commands, args.threads, Path(tmp))
        else:
            if not args.bootstrap_server:
                parser.error("--bootstrap-server or --embedded")
            workload(args.bootstrap_server, args.commands, args.threads, Path(tmp))


if __name__ == "__main__":
    main()
