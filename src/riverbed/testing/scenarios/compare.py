"""Differential runs: the same scenario against two servers, normalised, then diffed.

What may legitimately differ between two correct brokers is removed first: cluster ids,
node ids, ports (anywhere in a string), topic ids, throttle times and CreateTime
timestamps chosen by the client's clock (``timestamp_ms`` only when ``drop_timestamps``).
Dataclasses become dicts, tuples lists, bytes stay bytes, so the diff is structural.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable
from typing import Any

VOLATILE_KEYS: frozenset[str] = frozenset(
    {
        "cluster_id",
        "node_id",
        "broker_id",
        "controller_id",
        "leader_id",
        "port",
        "host",
        "topic_id",
        "throttle_time_ms",
        "bootstrap",
        "notes",
    }
)
_ADDRESS = re.compile(r"127\.0\.0\.1:\d+")


def normalise(data: Any, drop: Iterable[str] = (), drop_timestamps: bool = False) -> Any:
    """Plain, comparable data with the volatile parts removed (recursively)."""
    skip = VOLATILE_KEYS | set(drop) | ({"timestamp_ms"} if drop_timestamps else set())
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        data = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    if isinstance(data, dict):
        return {
            k: normalise(v, drop, drop_timestamps) for k, v in data.items() if str(k) not in skip
        }
    if isinstance(data, (list, tuple)):
        return [normalise(v, drop, drop_timestamps) for v in data]
    if isinstance(data, str):
        return _ADDRESS.sub("127.0.0.1:<port>", data)
    return data


def diff(a: Any, b: Any, path: str = "$") -> list[str]:
    """Human-readable differences between two normalised values (empty when equal)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            if key not in a:
                out.append(f"{path}.{key}: only in B ({b[key]!r})")
            elif key not in b:
                out.append(f"{path}.{key}: only in A ({a[key]!r})")
            else:
                out += diff(a[key], b[key], f"{path}.{key}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [f"{path}: length {len(a)} != {len(b)}"] if len(a) != len(b) else []
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += diff(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: {a!r} != {b!r}"]


def compare(
    scenario: Callable[[str], Any],
    bootstrap_a: str,
    bootstrap_b: str,
    drop: Iterable[str] = (),
    drop_timestamps: bool = False,
) -> list[str]:
    """Run ``scenario(bootstrap)`` against A then B; the normalised differences."""
    drop = tuple(drop)
    a = normalise(scenario(bootstrap_a), drop, drop_timestamps)
    b = normalise(scenario(bootstrap_b), drop, drop_timestamps)
    return diff(a, b)
