"""``riverbed users`` through the console entry point, against a broker with a PLAINTEXT
listener (for administration) and a SASL_PLAINTEXT one: a created user can log in with
SCRAM, a deleted one cannot, and the broker keeps the credentials across a restart."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, Producer

from riverbed.testing.embedded import EmbeddedBroker

ENTRY = [sys.executable, "-c", "from riverbed.cli.main import main; main()"]


def riverbed(*args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [*ENTRY, *args], capture_output=True, text=True, timeout=90, env=dict(os.environ)
    )
    assert "Traceback" not in done.stderr, done.stderr
    return done


def can_log_in(port: int, user: str, password: str, mechanism: str) -> bool:
    """True once the broker answers a metadata request over SASL_PLAINTEXT as ``user``,
    False once it refuses the authentication (librdkafka's ``_AUTHENTICATION`` error,
    reported in milliseconds, instead of waiting out a metadata timeout); an error when
    neither happens within 30 s."""
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism,
            "sasl.username": user,
            "sasl.password": password,
            "error_cb": errors.append,
        }
    )
    deadline = time.monotonic() + 30
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        assert time.monotonic() < deadline, f"{user}: neither logged in nor refused: {errors}"
        try:
            producer.list_topics(timeout=0.5)
            return True
        except KafkaException:
            producer.poll(0.1)  # serves error_cb
    return False


def test_users_create_describe_delete(tmp_path: Path) -> None:
    config = {
        "listeners": "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "offsets.topic.num.partitions": "1",
    }
    broker = EmbeddedBroker(tmp_path / "d", config).start()
    try:
        admin = f"127.0.0.1:{broker.broker.endpoint('PLAINTEXT')[1]}"
        sasl_port = broker.broker.endpoint("SASL_PLAINTEXT")[1]
        out = riverbed(
            "users",
            "create",
            "dana",
            "--mechanism",
            "SCRAM-SHA-512",
            "--password",
            "dana-pw",
            "--iterations",
            "4096",
            "--bootstrap-server",
            admin,
        )
        assert out.returncode == 0, out.stderr
        assert "user dana created for SCRAM-SHA-512" in out.stdout
        out = riverbed(
            "users", "create", "erik", "--password", "erik-pw", "--bootstrap-server", admin
        )
        assert out.returncode == 0, out.stderr
        out = riverbed("users", "describe", "--output", "json", "--bootstrap-server", admin)
        assert json.loads(out.stdout) == {
            "dana": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}],
            "erik": [{"mechanism": "SCRAM-SHA-256", "iterations": 8192}],
        }
        assert can_log_in(sasl_port, "dana", "dana-pw", "SCRAM-SHA-512")
        out = riverbed(
            "users",
            "describe",
            "dana",
            "-X",
            "security.protocol=SASL_PLAINTEXT",
            "-X",
            "sasl.mechanism=SCRAM-SHA-512",
            "-X",
            "sasl.username=dana",
            "-X",
            "sasl.password=dana-pw",
            "--bootstrap-server",
            f"127.0.0.1:{sasl_port}",
        )
        assert out.returncode == 0 and out.stdout == "dana\tSCRAM-SHA-512\t4096\n", out
        assert not can_log_in(sasl_port, "dana", "wrong", "SCRAM-SHA-512")
        out = riverbed(
            "users",
            "create",
            "bad",
            "--password",
            "x",
            "--iterations",
            "100",
            "--bootstrap-server",
            admin,
        )
        assert out.returncode == 2 and "4096" in out.stderr

        broker.restart()  # credentials are durable
        admin = f"127.0.0.1:{broker.broker.endpoint('PLAINTEXT')[1]}"
        sasl_port = broker.broker.endpoint("SASL_PLAINTEXT")[1]
        assert can_log_in(sasl_port, "erik", "erik-pw", "SCRAM-SHA-256")
        out = riverbed(
            "users", "delete", "erik", "--mechanism", "SCRAM-SHA-256", "--bootstrap-server", admin
        )
        assert out.returncode == 0, out.stderr
        assert not can_log_in(sasl_port, "erik", "erik-pw", "SCRAM-SHA-256")
        out = riverbed("users", "describe", "erik", "--bootstrap-server", admin)
        assert out.returncode == 1
        assert "describing user 'erik' failed" in out.stderr, out.stderr
        out = riverbed("users", "delete", "erik", "--bootstrap-server", admin)
        assert out.returncode == 1 and "does not exist" in out.stderr, out.stderr
    finally:
        broker.stop()
