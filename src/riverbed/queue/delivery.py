"""One record handed to a queue handler, and the outcomes a handler can ask for.

A :class:`Delivery` is a frozen copy of what the share consumer returned: the record's
coordinates (topic, partition, offset), its key, value, headers and timestamp, and the
broker's ``delivery_count`` (1 on the first delivery, one more each time the record is
released, its lock times out, or its consumer dies holding it).

Handlers signal an outcome by returning (ACCEPT) or raising:

- any exception: RELEASE, so the record is delivered again (to any worker) with
  ``delivery_count`` one higher, until ``max_attempts`` deliveries have failed; then REJECT;
- :class:`RejectDelivery`: REJECT at once (a poison message: never delivered again; the
  broker archives it, and copies it to the group's dead-letter topic where one is set).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from riverbed.errors import RiverbedError


class Outcome(Enum):
    """How a delivery was acknowledged (KIP-932's acknowledge types, by name)."""

    ACCEPT = "accept"
    """Processed: the record is done for this share group."""
    RELEASE = "release"
    """Not processed this time: the record becomes available again, delivery count + 1."""
    REJECT = "reject"
    """Unprocessable: archived, never delivered again to this share group."""


class QueueError(RiverbedError):
    """A queue worker could not run (bad settings, a fatal consumer error)."""


class RejectDelivery(Exception):
    """Raised by a handler to REJECT the record at once, whatever its delivery count."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """A record as delivered to a handler; ``delivery_count`` starts at 1."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp_ms: int | None
    delivery_count: int

    @property
    def redelivered(self) -> bool:
        """True when an earlier delivery of this record was not accepted."""
        return self.delivery_count > 1
