"""Push delivery: each share-group record POSTed to an HTTP endpoint (``riverbed webhook``).

A :class:`WebhookHandler` is a :mod:`riverbed.queue` handler: every delivery becomes one
``POST URL`` whose body is the record value, unchanged (empty when the value is null), with
``Content-Type: application/octet-stream`` and these headers:

=============================  ==========================================================
``X-Riverbed-Topic``           source topic
``X-Riverbed-Partition``       source partition (decimal)
``X-Riverbed-Offset``          record offset (decimal)
``X-Riverbed-Delivery-Count``  1 on the first delivery, +1 on each retry
``X-Riverbed-Key``             the record key, base64 (standard alphabet); absent if null
``X-Riverbed-Timestamp``       Unix seconds when the request was signed (decimal)
``X-Riverbed-Signature``       ``sha256=<hex>``: HMAC-SHA256 with the shared secret over
                               ``<timestamp> "." <body>``; only with a secret
=============================  ==========================================================

A receiver checks the signature with :func:`verify_signature` (or the same three lines in
any language: recompute, compare in constant time, refuse stale timestamps against replay).

Outcome per response (the endpoint decides; the share group enforces it):

- 2xx: ACCEPT.
- 408, 429, 5xx, a timeout or a connection error: RELEASE after a backoff, so it is
  retried with a higher delivery count (counted in ``X-Riverbed-Delivery-Count``), until
  ``max_attempts``; then REJECT.
- any other status (4xx, and 1xx/3xx since redirects are not followed): REJECT at once; the
  broker archives the record, and copies it to the group's dead-letter topic if set.

Thread-safety: one ``httpx.Client`` per worker thread (thread-local), so a handler instance
is shared by all workers of a :class:`~riverbed.queue.QueueWorkers`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import threading
import time
from collections.abc import Mapping
from typing import Any

import httpx

from riverbed.queue.delivery import Delivery, RejectDelivery

SIGNATURE_HEADER = "X-Riverbed-Signature"
TIMESTAMP_HEADER = "X-Riverbed-Timestamp"
RETRIABLE_STATUSES = frozenset({408, 429})


class WebhookRetry(Exception):
    """The endpoint failed transiently (5xx, 408, 429, timeout): RELEASE for a retry."""


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``sha256=<hex>`` of HMAC-SHA256(secret, ``b"<timestamp>." + body``)."""
    digest = hmac.new(secret, str(timestamp).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + digest.hexdigest()


def verify_signature(
    secret: bytes,
    headers: Mapping[str, str],
    body: bytes,
    tolerance_s: float = 300.0,
    now: float | None = None,
) -> bool:
    """True if ``headers`` carry a valid, fresh signature of ``body`` (receiver side)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    try:
        timestamp = int(lowered[TIMESTAMP_HEADER.lower()])
        signature = lowered[SIGNATURE_HEADER.lower()]
    except (KeyError, ValueError):
        return False
    if abs((time.time() if now is None else now) - timestamp) > tolerance_s:
        return False
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def request_headers(delivery: Delivery, body: bytes, secret: bytes | None) -> dict[str, str]:
    """The headers of the POST for ``delivery`` (see the module docstring)."""
    timestamp = int(time.time())
    headers = {
        "Content-Type": "application/octet-stream",
        "X-Riverbed-Topic": delivery.topic,
        "X-Riverbed-Partition": str(delivery.partition),
        "X-Riverbed-Offset": str(delivery.offset),
        "X-Riverbed-Delivery-Count": str(delivery.delivery_count),
        TIMESTAMP_HEADER: str(timestamp),
    }
    if delivery.key is not None:
        headers["X-Riverbed-Key"] = base64.b64encode(delivery.key).decode()
    if secret is not None:
        headers[SIGNATURE_HEADER] = sign(secret, timestamp, body)
    return headers


class WebhookHandler:
    """POSTs each delivery to ``url``; returns on 2xx, raises to RELEASE or REJECT."""

    def __init__(self, url: str, timeout_s: float = 10.0, secret: bytes | None = None) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.secret = secret
        self._local = threading.local()
        self._clients: list[httpx.Client] = []
        self._clients_lock = threading.Lock()

    def _client(self) -> httpx.Client:
        client: httpx.Client | None = getattr(self._local, "client", None)
        if client is None:
            client = httpx.Client(timeout=self.timeout_s, follow_redirects=False)
            self._local.client = client
            with self._clients_lock:
                self._clients.append(client)
        return client

    def __call__(self, delivery: Delivery) -> int:
        """POST ``delivery``; the 2xx status on success (see the module docstring)."""
        body = delivery.value or b""
        try:
            response = self._client().post(
                self.url, content=body, headers=request_headers(delivery, body, self.secret)
            )
        except httpx.TransportError as exc:  # timeouts, refused connections, resets
            raise WebhookRetry(f"{type(exc).__name__}: {exc}") from exc
        status = response.status_code
        if 200 <= status < 300:
            return status
        if status >= 500 or status in RETRIABLE_STATUSES:
            raise WebhookRetry(f"HTTP {status}")
        raise RejectDelivery(f"HTTP {status}")

    def close(self) -> None:
        """Close every thread's HTTP client (call after the workers stopped)."""
        with self._clients_lock:
            clients, self._clients = self._clients, []
        for client in clients:
            client.close()

    def __enter__(self) -> WebhookHandler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
