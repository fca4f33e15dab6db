"""Approximate analytics in event-time windows: distinct counts, percentiles, top-k, with
their error bounds.

All are Spark's own aggregates (no extra dependency), so they run in a streaming
aggregation (watermark + append mode: one final row per window) as well as on a batch:

* **distinct count, HLL++** -- ``approx_count_distinct(col, rsd)``: relative standard
  error ``rsd`` (default 0.05).  Deterministic for a given set of values (register-wise
  max), so a stream gives the batch's answer.
* **distinct count, mergeable HLL sketch** -- ``hll_sketch_agg(col, lgConfigK)`` (Apache
  DataSketches HLL, bundled in Spark 4): relative standard error ``1.04 / sqrt(2**k)``
  (:func:`hll_standard_error`; 1.63 % at k = 12).  The sketch (binary) is kept in the
  output so windows can be merged later with ``hll_union_agg`` (:func:`merge_distinct`),
  e.g. per-minute sketches into an hourly count, which exact distinct counts cannot do.
* **percentiles, GK** -- ``percentile_approx(col, ps, accuracy)``: the value returned for
  ``p`` has a rank within ``n / accuracy`` of ``p * n`` (Spark's documented bound).
* **percentiles, KLL** -- ``kll_sketch_agg_double(col, k)``: mergeable; normalized rank
  error about 1.65 % at k = 200 (:data:`KLL_RANK_ERROR`, DataSketches' 99 % bound).
* **top-k** -- :class:`MisraGries` (pure Python, mergeable): with ``capacity`` counters,
  every item's kept count is within ``n / (capacity + 1)`` below its true count, and every
  item more frequent than that is kept.  Spark has no streaming top-k aggregate (a pandas
  UDAF is refused in streaming aggregations), so :func:`top_k` runs it over a batch or a
  ``foreachBatch`` micro-batch, and :func:`windowed_top_k` keeps one summary per
  event-time window as the state of a stateful operator (a stream, one final row per
  window).

Error bounds are tested in tests/integration/pipelines_ops/test_approx.py against exact
answers (within 3 standard errors on seeded data).  Stateless helpers, driver-side only.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.errors import ConfigError

DEFAULT_RSD = 0.05
DEFAULT_LG_CONFIG_K = 12
DEFAULT_ACCURACY = 1000
DEFAULT_KLL_K = 200
KLL_RANK_ERROR = 0.0165  # normalized rank error at k = 200 (DataSketches, 99 % confidence)
PERCENTILES = (0.5, 0.9, 0.99)


def hll_standard_error(lg_config_k: int = DEFAULT_LG_CONFIG_K) -> float:
    """The relative standard error of an HLL sketch with ``2**lg_config_k`` buckets."""
    return 1.04 / math.sqrt(2**lg_config_k)


def windowed_approx(
    events: DataFrame,
    time_col: str,
    window: str,
    *,
    distinct_col: str,
    value_col: str,
    percentiles: Sequence[float] = PERCENTILES,
    rsd: float = DEFAULT_RSD,
    lg_config_k: int = DEFAULT_LG_CONFIG_K,
    accuracy: int = DEFAULT_ACCURACY,
    kll_k: int = DEFAULT_KLL_K,
) -> DataFrame:
    """Per tumbling ``window`` of ``time_col`` (a timestamp column): ``window_start``,
    ``window_end`` (timestamps), ``events`` (exact count), ``distinct_hllpp``,
    ``distinct_hll`` (longs), ``distinct_sketch`` (HLL binary), ``percentiles_gk``
    (array of doubles, one per ``percentiles``), ``percentiles_kll``, ``value_sketch``
    (KLL binary).

    On a stream set a watermark on ``time_col`` first and write in append mode.
    """
    if not percentiles or not all(0.0 <= p <= 1.0 for p in percentiles):
        raise ConfigError("percentiles must be in [0, 1]")
    ps = [float(p) for p in percentiles]
    value = F.col(value_col).cast("double")
    aggregated = events.groupBy(F.window(time_col, window).alias("w")).agg(
        F.count(F.lit(1)).alias("events"),
        F.approx_count_distinct(distinct_col, rsd).alias("distinct_hllpp"),
        F.hll_sketch_agg(F.col(distinct_col), lg_config_k).alias("distinct_sketch"),
        F.percentile_approx(value, ps, accuracy).alias("percentiles_gk"),
        F.kll_sketch_agg_double(value, kll_k).alias("value_sketch"),
    )
    return aggregated.select(
        F.col("w.start").alias("window_start"),
        F.col("w.end").alias("window_end"),
        "events",
        "distinct_hllpp",
        F.hll_sketch_estimate("distinct_sketch").alias("distinct_hll"),
        "distinct_sketch",
        "percentiles_gk",
        F.kll_sketch_get_quantile_double("value_sketch", F.array(*[F.lit(p) for p in ps])).alias(
            "percentiles_kll"
        ),
        "value_sketch",
    )


def merge_distinct(windows: DataFrame, *group_cols: str) -> DataFrame:
    """Merge the windows' ``distinct_sketch`` per ``group_cols`` (none: all of them):
    ``distinct_hll`` = the distinct count of the union, same error bound as one sketch."""
    merged = F.hll_sketch_estimate(F.hll_union_agg("distinct_sketch")).alias("distinct_hll")
    if group_cols:
        return windows.groupBy(*group_cols).agg(merged)
    return windows.agg(merged)


class MisraGries:
    """The Misra-Gries frequent-items summary with ``capacity`` counters.

    Invariant: for every item, ``true - n / (capacity + 1) <= estimate(item) <= true``,
    where ``n`` is the number of items added (over all merged summaries).  State format
    (:meth:`state`): JSON ``{"capacity": int, "n": int, "counts": {item: int}}``.  Not
    thread-safe.
    """

    def __init__(self, capacity: int, state: Mapping[str, Any] | None = None) -> None:
        if capacity < 1:
            raise ConfigError("capacity must be at least 1")
        self.capacity = capacity
        self.n = int((state or {}).get("n", 0))
        self.counts: dict[str, int] = {
            str(k): int(v) for k, v in (state or {}).get("counts", {}).items()
        }

    def state(self) -> dict[str, Any]:
        return {"capacity": self.capacity, "n": self.n, "counts": dict(self.counts)}

    @property
    def error_bound(self) -> float:
        """The most any estimate is below the true count."""
        return self.n / (self.capacity + 1)

    def add(self, item: str, count: int = 1) -> None:
        self.n += count
        self.counts[item] = self.counts.get(item, 0) + count
        self._trim()

    def update(self, items: Iterable[str]) -> None:
        for item in items:
            self.add(item)

    def merge(self, other: MisraGries) -> None:
        """Fold ``other`` in (the bound then holds for the union's ``n``)."""
        self.n += other.n
        for item, count in other.counts.items():
            self.counts[item] = self.counts.get(item, 0) + count
        self._trim()

    def _trim(self) -> None:
        if len(self.counts) <= self.capacity:
            return
        # subtract the (capacity+1)-th largest count from all; drop those at or below zero
        cut = sorted(self.counts.values(), reverse=True)[self.capacity]
        self.counts = {k: v - cut for k, v in self.counts.items() if v > cut}

    def estimate(self, item: str) -> int:
        return self.counts.get(item, 0)

    def top(self, k: int) -> list[tuple[str, int]]:
        """The ``k`` items with the largest estimates (ties by item), largest first."""
        return sorted(self.counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]


def top_k(
    events: DataFrame, item_col: str, k: int, capacity: int | None = None
) -> list[tuple[str, int]]:
    """The approximate top ``k`` values of ``item_col`` of a batch DataFrame (or a
    micro-batch in ``foreachBatch``): a :class:`MisraGries` summary per partition, merged
    on the driver.  Estimates are within ``n / (capacity + 1)`` below the true counts
    (``capacity`` defaults to ``10 * k``)."""
    size = capacity or 10 * k

    def summarize(rows: Iterable[Any]) -> Iterable[dict[str, Any]]:
        summary = MisraGries(size)
        for row in rows:
            value = row[0]
            if value is not None:
                summary.add(str(value))
        yield summary.state()

    total = MisraGries(size)
    for state in events.select(item_col).rdd.mapPartitions(summarize).collect():
        total.merge(MisraGries(size, state))
    return total.top(k)


TOP_K_SCHEMA = "window_start long, window_end long, views long, top string, max_undercount long"


class WindowTopKFunction:
    """The ``applyInPandasWithState`` function of :func:`windowed_top_k` (pickled to
    Spark's Python workers).  Key: the window start (epoch ms); input columns ``item``,
    ``ts`` (epoch ms); state: the window's :class:`MisraGries` state as JSON; event-time
    timer at ``window end - 1``.

    Spark drops rows behind the *previous* micro-batch's watermark before the operator
    but hands it those between that and the current one, so the function drops rows
    with ``ts <= watermark`` (the current one) itself, as Spark's window aggregation
    does.  A window is emitted when its timer fires or, should rows reach it after its
    end passed the watermark while it is still in state, right then.
    """

    def __init__(self, window_ms: int, k: int, capacity: int) -> None:
        if window_ms <= 0 or k < 1 or capacity < k:
            raise ConfigError("window_ms and k must be positive and capacity at least k")
        self.window_ms, self.k, self.capacity = window_ms, k, capacity

    def _emit(self, start: int, summary: MisraGries) -> pd.DataFrame:
        top = [{"item": item, "count": count} for item, count in summary.top(self.k)]
        return pd.DataFrame(
            {
                "window_start": [start],
                "window_end": [start + self.window_ms],
                "views": [summary.n],
                "top": [json.dumps(top, separators=(",", ":"))],
                "max_undercount": [int(summary.error_bound)],
            }
        )

    def __call__(
        self, key: tuple[Any, ...], frames: Iterator[pd.DataFrame], state: GroupState
    ) -> Iterator[pd.DataFrame]:
        start = int(key[0])
        end = start + self.window_ms
        summary = MisraGries(self.capacity, json.loads(state.get[0]) if state.exists else None)
        if state.hasTimedOut:
            state.remove()
            yield self._emit(start, summary)
            return
        watermark = int(state.getCurrentWatermarkMs())
        items = sorted(
            str(item)
            for frame in frames
            for item, ts in zip(frame["item"], frame["ts"], strict=True)
            if item is not None and item == item and int(ts) > watermark
        )
        if end <= watermark:  # closed: its rows are all behind the watermark
            if state.exists:
                state.remove()
                yield self._emit(start, summary)
            return
        if not items and not state.exists:
            return
        for item in items:
            summary.add(item)
        state.update((json.dumps(summary.state()),))
        # fires in the first micro-batch whose watermark is >= the window's end
        state.setTimeoutTimestamp(end - 1)


def windowed_top_k(
    events: DataFrame,
    time_col: str,
    item_col: str,
    window_ms: int,
    k: int,
    capacity: int | None = None,
) -> DataFrame:
    """The approximate top ``k`` values of ``item_col`` per tumbling window ``[start,
    start + window_ms)`` (epoch ms) of ``time_col`` on a *stream*.

    ``time_col`` is a timestamp column carrying the stream's watermark
    (``withWatermark``): rows at or behind it when they arrive are dropped, as Spark's
    window aggregation drops them.  State:
    one :class:`MisraGries` summary (``capacity`` counters, default ``10 * k``) per open
    window, spread over the windows' keys; removed when the window is emitted.  Output
    (:data:`TOP_K_SCHEMA`, append mode): one final row per window, once the watermark
    reaches its end: ``views`` (exact count), ``top`` (JSON ``[{"item", "count"}, ...]``,
    largest first, ties by item), ``max_undercount`` = ``floor(views / (capacity + 1))``:
    every ``count`` is at most that much below the true count, and every item more
    frequent than that is among the kept counters.  With no more distinct items in a
    window than ``capacity`` the counts are exact.  Rows with a null item or ts are
    skipped.  Works per micro-batch whatever the batching: the counts are
    order-independent as long as no summary trims (at most ``capacity`` distinct items).
    """
    size = capacity or 10 * k
    function = WindowTopKFunction(window_ms, k, size)
    ts = F.unix_millis(F.col(time_col))
    keyed = events.filter(ts.isNotNull() & F.col(item_col).isNotNull()).select(
        (ts - F.pmod(ts, F.lit(window_ms))).alias("window_start"),
        F.col(item_col).cast("string").alias("item"),
        ts.alias("ts"),
        F.col(time_col),
    )
    return keyed.groupBy("window_start").applyInPandasWithState(
        function, TOP_K_SCHEMA, "state string", "append", GroupStateTimeout.EventTimeTimeout
    )
