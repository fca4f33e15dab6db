"""riverbed.queue pieces that need no broker: settings, backoff, webhook signatures."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from riverbed.errors import RiverbedError
from riverbed.queue import Delivery, QueueError, WorkerSettings
from riverbed.queue.webhook import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    request_headers,
    sign,
    verify_signature,
)

DELIVERY = Delivery("orders", 3, 42, b"\x00key", b'{"id": 1}', (), 1_700_000_000_000, 2)


def test_backoff_doubles_per_delivery_up_to_the_cap() -> None:
    settings = WorkerSettings("h:1", "g", ("t",), retry_backoff_ms=100, retry_backoff_max_ms=1_000)
    assert [settings.backoff_s(n) for n in (1, 2, 3, 4, 5, 9)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"max_attempts": 0}, {"topics": ()}])
def test_settings_refuse_nonsense(kwargs: dict[str, object]) -> None:
    base: dict[str, object] = {"bootstrap_servers": "h:1", "group_id": "g", "topics": ("t",)}
    with pytest.raises(QueueError):
        WorkerSettings(**{**base, **kwargs})  # type: ignore[arg-type]


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    expected = hmac.new(b"k", b"1700000000." + b"body", hashlib.sha256).hexdigest()
    assert sign(b"k", 1_700_000_000, b"body") == f"sha256={expected}"


def test_request_headers_and_verification() -> None:
    body = DELIVERY.value or b""
    headers = request_headers(DELIVERY, body, b"secret")
    assert headers["X-Riverbed-Topic"] == "orders"
    assert headers["X-Riverbed-Partition"] == "3"
    assert headers["X-Riverbed-Offset"] == "42"
    assert headers["X-Riverbed-Delivery-Count"] == "2"
    assert headers["X-Riverbed-Key"] == "AGtleQ=="
    assert verify_signature(b"secret", headers, body)
    assert not verify_signature(b"other", headers, body)
    assert not verify_signature(b"secret", headers, body + b" ")
    stale = float(headers[TIMESTAMP_HEADER]) + 301
    assert not verify_signature(b"secret", headers, body, now=stale)
    lowered = {k.lower(): v for k, v in headers.items()}  # HTTP headers are case-insensitive
    assert verify_signature(b"secret", lowered, body)


def test_no_secret_no_signature() -> None:
    headers = request_headers(DELIVERY, b"", None)
    assert SIGNATURE_HEADER not in headers and TIMESTAMP_HEADER in headers


def test_public_api() -> None:
    import riverbed.queue

    assert sorted(riverbed.queue.__all__) == [
        "Delivery",
        "Handler",
        "Outcome",
        "OutcomeCallback",
        "QueueError",
        "QueueStats",
        "QueueWorkerProcesses",
        "QueueWorkers",
        "RejectDelivery",
        "WorkerSettings",
    ]
    assert issubclass(riverbed.queue.QueueError, RiverbedError)
