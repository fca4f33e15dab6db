"""The operator examples run by ``riverbed pipeline run NAME --available-now`` from a plain
shell (a child process, its own JVM): output topics created by the run, a small known
input gives the documented output values exactly.

Marked ``pipeline_cli`` (a JVM per run, ~6-8 min for the file on 2 loaded cores)::

    .venv/bin/python -m pytest -q -p no:cacheprovider -m pipeline_cli \
        tests/integration/pipelines_time/test_operator_examples_cli.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from riverbed.testing.broker_process import BrokerProcess

from .conftest import drain
from .contract import MINUTE_MS, T0
from .test_time_examples_cli import run_available_now

pytestmark = [pytest.mark.pipeline_cli, pytest.mark.timeout(900)]  # two JVM runs each

W0 = T0 - T0 % (5 * MINUTE_MS)  # a 5 min window start
END = W0 + 5 * MINUTE_MS


def _produce(bootstrap: str, topic: str, records: list[tuple[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, key=key, value=None if value is None else json.dumps(value))
    assert producer.flush(60) == 0


def _view(user: str, url: str, ts: int, load_ms: int | None = None) -> tuple[str, Any]:
    value: dict[str, Any] = {"user_id": user, "url": url, "ts": ts}
    if load_ms is not None:
        value["load_ms"] = load_ms
    return (user, value)


# the three views of window W0, then one 20 min later that closes it (watermark W0+10 min)
VIEWS = [
    _view("a", "/x", W0 + 1000, 100),
    _view("a", "/x", W0 + 2000, 300),
    _view("b", "/y", W0 + 3000, 200),
    _view("c", "/z", W0 + 20 * MINUTE_MS, 50),
]
CASES: dict[str, tuple[dict[str, list[tuple[str, Any]]], dict[str, list[tuple[bytes, Any]]]]] = {
    "approx-pageviews": (
        {"pageviews": VIEWS},
        {
            "pageview-stats": [
                (
                    str(W0).encode(),
                    {
                        "window_start": W0,
                        "window_end": END,
                        "views": 3,
                        "distinct_users": 2,
                        "p50_load_ms": 200,
                        "p99_load_ms": 300,
                    },
                )
            ],
            "top-urls": [
                (
                    str(W0).encode(),
                    {
                        "window_start": W0,
                        "window_end": END,
                        "views": 3,
                        "top": [{"url": "/x", "views": 2}, {"url": "/y", "views": 1}],
                        "max_undercount": 0,
                    },
                )
            ],
        },
    ),
    "late-policies": (
        {"pageviews": VIEWS},
        {
            f"pageview-counts-{policy}": [
                (
                    str(W0).encode(),
                    {
                        "kind": "final",
                        "window_start": W0,
                        "window_end": END,
                        "count": 3,
                        "previous": None,
                    },
                )
            ]
            for policy in ("drop", "side", "update")
        }
        | {"pageviews-late": []},
    ),
    "stored-queries": (
        {
            "stored-queries": [("disk", {"terms": ["disk"]}), ("gone", {}), ("gone", None)],
            "documents": [("1", {"doc_id": 1, "text": "Disk full"}), ("2", {"doc_id": 2})],
        },
        {
            "query-matches": [
                (b"disk", {"query_id": "disk", "event": {"doc_id": 1, "text": "Disk full"}})
            ]
        },
    ),
    "clock-skew": (
        {
            "device-events": [
                # the device's clock is 1 h behind: corrected to W0 + 1 min
                (
                    "d",
                    {
                        "device_id": "d",
                        "event_ts": W0 + MINUTE_MS - 3_600_000,
                        "send_ts": W0 + MINUTE_MS - 3_600_000 + 5000,
                        "receive_ts": W0 + MINUTE_MS + 5000,
                    },
                ),
                (
                    "e",
                    {
                        "device_id": "e",
                        "event_ts": W0 + 20 * MINUTE_MS,
                        "send_ts": W0 + 20 * MINUTE_MS,
                        "receive_ts": W0 + 20 * MINUTE_MS,
                    },
                ),
            ]
        },
        {
            "device-event-counts": [
                (b"d", {"device_id": "d", "window_start": W0, "window_end": END, "events": 1})
            ]
        },
    ),
    "repartition-sessions": (
        {"pageviews": [("/1", VIEWS[0][1]), ("/9", _view("a", "/9", T0 + 90 * MINUTE_MS)[1])]},
        {
            "sessions-by-user": [
                (
                    b"a",
                    {
                        "user_id": "a",
                        "session_start": W0 + 1000,
                        "session_end": W0 + 1000,
                        "views": 1,
                        "urls": ["/x"],
                    },
                )
            ]
        },
    ),
    "sliding-failures": (
        {
            "logins": [
                ("u", {"user_id": "u", "ok": False, "ts": T0 + t * 1000}) for t in (0, 10, 65, 68)
            ]
            + [("v", {"user_id": "v", "ok": True, "ts": T0 + 15 * MINUTE_MS})]
        },
        {
            "failed-login-bursts": [
                (b"u", {"user_id": "u", "failed_ts": [T0 + 10_000, T0 + 65_000, T0 + 68_000]})
            ]
        },
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_operator_example_cli(broker: BrokerProcess, tmp_path: Path, name: str) -> None:
    bootstrap = broker.bootstrap_servers
    inputs, outputs = CASES[name]
    run_available_now(name, bootstrap, tmp_path / "chk")  # creates the topics
    for topic in outputs:
        assert drain(bootstrap, topic) == []
    if name == "stored-queries":
        admin = AdminClient({"bootstrap.servers": bootstrap})
        resource = ConfigResource("topic", "stored-queries")
        configs = admin.describe_configs([resource])[resource].result(60)
        assert configs["cleanup.policy"].value == "compact"
    for topic, records in inputs.items():
        _produce(bootstrap, topic, records)
    run_available_now(name, bootstrap, tmp_path / "chk")
    for topic, expected in outputs.items():
        assert drain(bootstrap, topic) == expected, topic
