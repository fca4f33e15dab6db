"""Live throughput: high watermarks sampled server-side, rendered as a tiny inline SVG.

:class:`ThroughputSampler` keeps, per topic, the last :data:`WINDOW` samples of the sum of
its partitions' high watermarks (``(monotonic seconds, offsets)``).  The rate between two
samples is ``Δoffsets / Δt`` (records per second, transaction markers included).  The
console's event loop calls :meth:`ThroughputSampler.record` with what a worker thread read
(:meth:`riverbed.console.cluster.Cluster.high_watermarks`); pages read :meth:`rates`.
All access happens on the event loop thread, so there is no lock; state is in memory only
and starts empty after a restart.

:func:`sparkline_svg` draws rates as an SVG polyline: no JavaScript, no CDN.
"""

from __future__ import annotations

import itertools
from collections import deque
from html import escape

WINDOW = 60
"""Samples kept per topic (with the default 2 s interval: two minutes)."""


class ThroughputSampler:
    """Per-topic high-watermark history (see module doc).  Event-loop thread only."""

    def __init__(self, window: int = WINDOW) -> None:
        self._window = window
        self._samples: dict[str, deque[tuple[float, int]]] = {}

    def record(self, at_s: float, high_watermarks: dict[str, int]) -> None:
        """Add one sample taken at monotonic time ``at_s``; topics gone are dropped."""
        for topic in list(self._samples):
            if topic not in high_watermarks:
                del self._samples[topic]
        for topic, offsets in high_watermarks.items():
            self._samples.setdefault(topic, deque(maxlen=self._window)).append((at_s, offsets))

    def rates(self, topic: str) -> list[float]:
        """Records per second between consecutive samples of ``topic`` (oldest first)."""
        samples = list(self._samples.get(topic, ()))
        out = []
        for (t0, o0), (t1, o1) in itertools.pairwise(samples):
            out.append(max(o1 - o0, 0) / (t1 - t0) if t1 > t0 else 0.0)
        return out

    def topics(self) -> list[str]:
        return sorted(self._samples)

    def latest(self, topic: str) -> int | None:
        """The last sampled high-watermark sum of ``topic``."""
        samples = self._samples.get(topic)
        return samples[-1][1] if samples else None


def sparkline_svg(values: list[float], width: int = 240, height: int = 48, label: str = "") -> str:
    """An inline ``<svg>`` polyline of ``values`` scaled to its maximum (a flat line when
    empty or all zero); ``label`` becomes the SVG title."""
    top = max(values, default=0.0) or 1.0
    n = max(len(values) - 1, 1)
    points = " ".join(
        f"{i * width / n:.1f},{height - 2 - (v / top) * (height - 4):.1f}"
        for i, v in enumerate(values or [0.0, 0.0])
    )
    return (
        f'<svg class="spark" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img"><title>{escape(label)}</title>'
        f'<polyline fill="none" stroke="#2a7ab0" stroke-width="2" points="{points}"/></svg>'
    )
