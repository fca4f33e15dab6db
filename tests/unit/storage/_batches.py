"""Tiny builders of v2 record batches for the storage tests."""

from __future__ import annotations

from riverbed.protocol.records import build_batch, iter_batches_with_records


def batch(
    *values: bytes | None,
    key: bytes | None = None,
    ts: int = 1_700_000_000_000,
    pid: int = -1,
    epoch: int = -1,
    seq: int = -1,
    keys: list[bytes | None] | None = None,
    compression: int = 0,
) -> bytes:
    ks = keys if keys is not None else [key] * len(values)
    return build_batch(
        [(k, v, ts) for k, v in zip(ks, values, strict=True)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
        base_timestamp=ts,
        compression=compression,
    )


def values(records: bytes, start: int = 0) -> list[tuple[int, bytes | None]]:
    return [
        (r.offset, r.value)
        for _h, rs in iter_batches_with_records(records)
        for r in rs
        if r.offset >= start
    ]
