"""Batches written by librdkafka, kafka-python and aiokafka (captured by
tools/capture_batch_fixtures.py, see tests/fixtures/batches/README.md) parse to exactly
the records their writers were given, under every codec."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from riverbed.protocol.batch import iter_batches
from riverbed.protocol.records import Header, iter_batches_with_records, read_batch, rebuild_batch

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "batches"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.bin"))


def _bytes(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


def _load(name: str) -> tuple[bytes, dict[str, Any]]:
    meta = json.loads((FIXTURES / f"{name}.json").read_text())
    return (FIXTURES / f"{name}.bin").read_bytes(), meta


def test_every_writer_and_codec_is_present() -> None:
    for writer in ("librdkafka", "kafka-python", "aiokafka"):
        for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
            assert f"{writer}-{codec}" in NAMES
    assert "librdkafka-txn" in NAMES


@pytest.mark.parametrize("name", NAMES)
def test_fixture_decodes_to_its_sidecar(name: str) -> None:
    blob, meta = _load(name)
    batches = list(iter_batches_with_records(blob))
    assert batches, "a fixture holds at least one batch"
    records = [r for _, batch in batches for r in batch]
    expected = meta["records"]
    assert len(records) == len(expected)
    for i, (record, want) in enumerate(zip(records, expected, strict=True)):
        assert record.offset == i
        assert record.timestamp == want["timestamp"]
        assert record.key == _bytes(want["key_b64"])
        assert record.value == _bytes(want["value_b64"])
        assert record.headers == tuple(Header(k, _bytes(v)) for k, v in want["headers"])
    for header, _ in batches:
        assert header.compression == meta["codec_id"]
        assert header.is_transactional == bool(meta.get("transactional"))
        assert header.max_timestamp == max(w["timestamp"] for w in expected)
        if meta["writer"] == "librdkafka":  # idempotent producer
            assert header.producer_id >= 0 and header.base_sequence == 0
        else:
            assert (header.producer_id, header.producer_epoch, header.base_sequence) == (
                4242,
                3,
                17,
            )


def test_librdkafka_snappy_is_raw_and_java_style_writers_use_xerial() -> None:
    assert _load("librdkafka-snappy")[0][61:69] != b"\x82SNAPPY\x00"
    assert _load("kafka-python-snappy")[0][61:69] == b"\x82SNAPPY\x00"


@pytest.mark.parametrize("name", NAMES)
def test_header_fast_path_agrees_and_rebuild_round_trips(name: str) -> None:
    blob, _ = _load(name)
    positions = [pos for pos, _ in iter_batches(blob)]
    for pos in positions:
        header, records = read_batch(blob, pos)
        again_header, again = read_batch(rebuild_batch(header, records))
        assert again == records
        assert (again_header.base_offset, again_header.last_offset_delta) == (
            header.base_offset,
            header.last_offset_delta,
        )
