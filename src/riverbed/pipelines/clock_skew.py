"""Correcting device clock skew: event time measured on the device, re-expressed on the
server's clock.

Each event carries three timestamps (epoch ms):

* ``event_ts`` -- when the event happened, by the device's clock;
* ``send_ts`` -- when the device sent it, by the device's clock;
* ``receive_ts`` -- when the server received it, by the server's clock.

As the chapter says, ``receive_ts - send_ts`` estimates the device's clock offset (how far
the device's clock is *behind* the server's) plus the network delay, which is small and
non-negative.  Adding that offset to ``event_ts`` puts the event on the server's clock:

    corrected_ts = event_ts + (receive_ts - send_ts)

The error of a corrected time is the network delay of the estimate used (never negative
for a per-event estimate: the corrected time is at most that delay *late*).  Two
estimates:

* ``per_event`` (:func:`correct_per_event`): each event's own ``receive - send``.
  Stateless, so it works on a stream unchanged (no state, nothing to checkpoint).
* ``median`` (:func:`correct_per_device`): the median of the device's offsets over the
  rows given (a batch DataFrame, or one micro-batch inside ``foreachBatch``), robust to a
  few slow deliveries; :class:`DeviceClock` keeps it incrementally (latest or median of
  the last ``window`` offsets) for stateful operators.

A device whose clock is *ahead* of the server's has a negative offset.  Rows with a null
timestamp get a null ``corrected_ts``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any, Literal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from riverbed.errors import ConfigError

Estimate = Literal["latest", "median"]


def offset_ms(send_ts: int, receive_ts: int) -> int:
    """The device's estimated clock offset: ``receive_ts - send_ts``."""
    return receive_ts - send_ts


class DeviceClock:
    """One device's clock-offset estimate, fed with ``(send_ts, receive_ts)`` pairs.

    ``estimate="latest"`` uses the last pair; ``"median"`` the median of the last
    ``window`` pairs.  State format (:meth:`state`): JSON ``{"offsets": [int, ...]}`` (the
    last ``window`` offsets, oldest first).  Not thread-safe.
    """

    def __init__(
        self,
        estimate: Estimate = "median",
        window: int = 15,
        state: Mapping[str, Any] | None = None,
    ) -> None:
        if estimate not in ("latest", "median"):
            raise ConfigError(f"unknown clock offset estimate {estimate!r}")
        if window < 1:
            raise ConfigError("window must be at least 1")
        self.estimate = estimate
        self.window = window
        self._offsets: list[int] = [int(o) for o in (state or {}).get("offsets", [])][-window:]

    def state(self) -> dict[str, Any]:
        return {"offsets": list(self._offsets)}

    def observe(self, send_ts: int, receive_ts: int) -> None:
        self._offsets.append(offset_ms(send_ts, receive_ts))
        del self._offsets[: -self.window]

    @property
    def offset_ms(self) -> int | None:
        """The current estimate, or None before the first observation."""
        if not self._offsets:
            return None
        if self.estimate == "latest":
            return self._offsets[-1]
        return int(statistics.median_low(self._offsets))

    def correct(self, event_ts: int) -> int:
        """``event_ts`` on the server's clock (unchanged before any observation)."""
        offset = self.offset_ms
        return event_ts if offset is None else event_ts + offset


def correct_per_event(
    events: DataFrame,
    event_col: str = "event_ts",
    send_col: str = "send_ts",
    receive_col: str = "receive_ts",
    out_col: str = "corrected_ts",
) -> DataFrame:
    """``events`` plus ``out_col = event + (receive - send)`` (epoch ms, long); stateless,
    for streams and batches alike."""
    offset = F.col(receive_col) - F.col(send_col)
    return events.withColumn(out_col, (F.col(event_col) + offset).cast("long"))


def correct_per_device(
    events: DataFrame,
    device_col: str = "device_id",
    event_col: str = "event_ts",
    send_col: str = "send_ts",
    receive_col: str = "receive_ts",
    out_col: str = "corrected_ts",
) -> DataFrame:
    """``events`` plus ``offset_ms`` (the device's median ``receive - send`` over these
    rows, exact: Spark's ``median``, rounded down) and ``out_col = event + offset_ms``.

    Needs all of a device's rows at once: a batch DataFrame, or a micro-batch inside
    ``foreachBatch`` (then the median is over that micro-batch).  Not for a streaming
    DataFrame (Spark refuses the join of a stream with its own aggregate).
    """
    offsets = events.groupBy(device_col).agg(
        F.floor(F.median(F.col(receive_col) - F.col(send_col))).cast("long").alias("offset_ms")
    )
    joined = events.join(offsets, on=device_col, how="left")
    return joined.withColumn(out_col, (F.col(event_col) + F.col("offset_ms")).cast("long"))
