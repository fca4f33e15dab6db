"""``riverbed transactions list|describe`` through the console entry point, against an
embedded broker with a confluent-kafka transactional producer: an open transaction
(Ongoing, its partitions listed), then the same id after commit (CompleteCommit), and an
unknown id reported in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from cli_helpers import new_topic
from confluent_kafka import Producer

from riverbed.testing.embedded import EmbeddedBroker

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def riverbed(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args], capture_output=True, text=True, timeout=60, env=dict(os.environ)
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def test_transactions_list_and_describe(tmp_path: Path) -> None:
    with EmbeddedBroker(tmp_path / "d") as broker:
        bs = ("--bootstrap-server", broker.bootstrap_servers)
        topic = new_topic(broker.bootstrap_servers, partitions=2)
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "transactional.id": "cli-txn",
                "transaction.timeout.ms": 60_000,
            }
        )
        producer.init_transactions(15)
        producer.begin_transaction()
        for partition in (0, 1):
            producer.produce(topic, b"v", partition=partition)
        producer.flush(10)

        listed = json.loads(riverbed("transactions", "list", "--output", "json", *bs).stdout)
        assert [(r["transactional_id"], r["state"]) for r in listed] == [("cli-txn", "Ongoing")]
        text = riverbed("transactions", "list", *bs).stdout.splitlines()
        assert text[0].split() == ["TRANSACTIONAL_ID", "COORDINATOR", "PRODUCER_ID", "STATE"]
        assert text[1].split()[0] == "cli-txn" and text[1].split()[-1] == "Ongoing"

        done = riverbed("transactions", "describe", "cli-txn", "--output", "json", *bs)
        assert done.returncode == 0, done.stderr
        ongoing = json.loads(done.stdout)
        assert ongoing["state"] == "Ongoing"
        assert ongoing["partitions"] == [f"{topic}-0", f"{topic}-1"]
        assert ongoing["transaction_timeout_ms"] == 60_000
        assert ongoing["transaction_start_time_ms"] is not None
        assert ongoing["producer_id"] == listed[0]["producer_id"]

        producer.commit_transaction(15)
        done = riverbed("transactions", "describe", "cli-txn", *bs)
        assert done.returncode == 0, done.stderr
        assert "STATE: CompleteCommit" in done.stdout.splitlines()
        assert "PARTITIONS: -" in done.stdout.splitlines()
        ongoing_only = riverbed(
            "transactions", "list", "--state", "Ongoing", "--output", "json", *bs
        )
        assert json.loads(ongoing_only.stdout) == []

        missing = riverbed("transactions", "describe", "nobody", *bs)
        assert missing.returncode == 1
        assert missing.stderr.startswith("riverbed: error: describe 'nobody' failed: ")
        assert len(missing.stderr.strip().splitlines()) == 1


def test_transactions_unreachable_broker() -> None:
    done = riverbed("transactions", "list", "--bootstrap-server", "127.0.0.1:1")
    assert done.returncode == 1
    assert done.stderr.startswith("riverbed: error: cannot reach a broker at 127.0.0.1:1")
