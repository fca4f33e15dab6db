"""Scenarios driven by kcat 1.7.1 (Debian; librdkafka 2.0.2, an older client).

kcat cannot set per-record timestamps or per-record headers, and reports no offsets when
producing, so :func:`roundtrip` produces one run per partition (``-p N -H k=v -K '|'``)
and takes the delivered offsets from the consumer's view; the records must come from
``make_records(..., text_only=True, with_timestamps=False)``.  Consumed timestamps are the
broker-observed CreateTime set by kcat at send time.
"""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Sequence

from riverbed.testing.scenarios.records import ConsumedRecord, Record, RoundTrip

KEY_DELIMITER = "|"


def available() -> bool:
    return shutil.which("kcat") is not None


def _kcat(args: list[str], stdin: bytes | None = None, timeout_s: float = 60.0) -> bytes:
    proc = subprocess.run(
        ["kcat", "-X", "client.id=riverbed-compat-kcat", *args],
        input=stdin,
        capture_output=True,
        timeout=timeout_s,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"kcat {args} failed: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def produce(bootstrap: str, topic: str, records: Sequence[Record], codec: str = "none") -> None:
    by_partition: dict[int, list[Record]] = {}
    for rec in records:
        by_partition.setdefault(rec.partition, []).append(rec)
    for partition, recs in sorted(by_partition.items()):
        headers = recs[0].headers
        if any(r.headers != headers for r in recs) or any(
            r.key is None or r.value is None for r in recs
        ):
            raise ValueError("kcat needs equal headers and non-null keys/values per partition")
        lines = b"".join(
            r.key + KEY_DELIMITER.encode() + r.value + b"\n"  # type: ignore[operator]
            for r in recs
        )
        args = [
            "-P",
            "-b",
            bootstrap,
            "-t",
            topic,
            "-p",
            str(partition),
            "-K",
            KEY_DELIMITER,
            "-z",
            codec,
            "-X",
            "acks=all",
        ]
        for name, value in headers:
            args += ["-H", f"{name}={(value or b'').decode()}"]
        _kcat(args, stdin=lines)


def consume_all(
    bootstrap: str, topic: str, partitions: Sequence[int]
) -> tuple[ConsumedRecord, ...]:
    out: list[ConsumedRecord] = []
    for partition in partitions:
        raw = _kcat(
            [
                "-C",
                "-b",
                bootstrap,
                "-t",
                topic,
                "-p",
                str(partition),
                "-o",
                "beginning",
                "-e",
                "-J",
                "-q",
            ]
        )
        for line in raw.splitlines():
            if not line.strip():
                continue
            msg = json.loads(line)
            hdrs = msg.get("headers") or []
            headers = tuple(
                (hdrs[i], None if hdrs[i + 1] is None else hdrs[i + 1].encode())
                for i in range(0, len(hdrs), 2)
            )
            out.append(
                ConsumedRecord(
                    msg["partition"],
                    msg["offset"],
                    _field(msg, "key"),
                    _field(msg, "payload"),
                    headers,
                    msg["ts"],
                )
            )
    return tuple(sorted(out, key=lambda r: (r.partition, r.offset)))


def _field(msg: dict[str, object], name: str) -> bytes | None:
    value = msg.get(name)
    if value is None:
        return None
    if msg.get(f"{name}_error"):
        raise RuntimeError(str(msg[f"{name}_error"]))
    return base64.b64decode(str(value)) if msg.get(f"{name}_b64") else str(value).encode()


def roundtrip(bootstrap: str, topic: str, codec: str, records: Sequence[Record]) -> RoundTrip:
    produce(bootstrap, topic, records, codec)
    consumed = consume_all(bootstrap, topic, sorted({r.partition for r in records}))
    # kcat reports no offsets: the n-th record sent to a partition has the n-th offset read.
    seen: dict[int, list[int]] = {}
    for got in consumed:
        seen.setdefault(got.partition, []).append(got.offset)
    delivered = [(rec.partition, seen[rec.partition].pop(0)) for rec in records]
    return RoundTrip(tuple(delivered), consumed)
