"""Compression codecs of record batches: formats, bounds on decompression, bad input."""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import cramjam
import lz4.frame
import pytest
import zstandard

from riverbed.errors import CorruptRecordError, UnsupportedCompressionError
from riverbed.protocol.compression import (
    XERIAL_MAGIC,
    CompressionType,
    compress,
    decompress,
)
from riverbed.protocol.records import build_batch, read_batch

CODECS = list(CompressionType)
PAYLOAD = b"".join(f"record {i} ".encode() + os.urandom(8) for i in range(5_000))


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip(codec: CompressionType) -> None:
    assert decompress(codec, compress(codec, PAYLOAD)) == PAYLOAD
    assert decompress(codec, compress(codec, b"")) == b""


def test_wire_formats_are_kafkas() -> None:
    assert compress(CompressionType.GZIP, b"x")[:2] == b"\x1f\x8b"
    xerial = compress(CompressionType.SNAPPY, PAYLOAD)
    assert xerial[:16] == XERIAL_MAGIC + struct.pack(">ii", 1, 1)
    assert lz4.frame.get_frame_info(compress(CompressionType.LZ4, PAYLOAD))["block_linked"] is False
    assert compress(CompressionType.ZSTD, b"x")[:4] == b"\x28\xb5\x2f\xfd"


def test_foreign_encodings_are_accepted() -> None:
    assert decompress(CompressionType.GZIP, gzip.compress(PAYLOAD)) == PAYLOAD
    raw_snappy = bytes(cramjam.snappy.compress_raw(PAYLOAD))
    assert decompress(CompressionType.SNAPPY, raw_snappy) == PAYLOAD
    assert decompress(CompressionType.LZ4, lz4.frame.compress(PAYLOAD)) == PAYLOAD
    two_frames = zstandard.ZstdCompressor().compress(b"ab") + zstandard.ZstdCompressor().compress(
        b"cd"
    )
    assert decompress(CompressionType.ZSTD, two_frames) == b"abcd"
    assert decompress(CompressionType.GZIP, gzip.compress(b"ab") + gzip.compress(b"cd")) == b"abcd"


@pytest.mark.parametrize("codec", CODECS)
def test_decompressed_size_is_bounded(codec: CompressionType) -> None:
    bomb = compress(codec, bytes(4 << 20))
    with pytest.raises(CorruptRecordError, match="exceed the limit"):
        decompress(codec, bomb, max_size=1 << 20)
    assert len(decompress(codec, bomb, max_size=4 << 20)) == 4 << 20


def test_raw_snappy_declaring_a_huge_length_is_refused_before_allocation() -> None:
    fake = bytes([0x80, 0x80, 0x80, 0x80, 0x0F]) + b"\x00"  # preamble: 4 GiB - ish
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.SNAPPY, fake, max_size=1 << 20)


def test_zstd_frame_claiming_a_huge_content_size_is_bounded() -> None:
    big = zstandard.ZstdCompressor(write_content_size=True).compress(bytes(8 << 20))
    with pytest.raises(CorruptRecordError, match="exceed the limit"):
        decompress(CompressionType.ZSTD, big, max_size=1 << 20)


@pytest.mark.parametrize("codec", [c for c in CODECS if c is not CompressionType.NONE])
def test_bad_and_truncated_data_are_corrupt(codec: CompressionType) -> None:
    good = compress(codec, PAYLOAD)
    for bad in (b"", b"garbage" * 10, good[: len(good) // 2], good[:-3], good + b"\x01\x02"):
        with pytest.raises(CorruptRecordError):
            decompress(codec, bad)


def test_unknown_codec() -> None:
    for codec_id in (5, 6, 7, -1):
        with pytest.raises(UnsupportedCompressionError):
            decompress(codec_id, b"")
        with pytest.raises(UnsupportedCompressionError):
            compress(codec_id, b"")


@pytest.mark.parametrize("codec", CODECS[1:])
def test_batch_limit_is_passed_through(codec: CompressionType) -> None:
    buf = build_batch([(b"k", bytes(100_000), 0)], compression=codec)
    read_batch(buf, max_decompressed_bytes=200_000)
    with pytest.raises(CorruptRecordError):
        read_batch(buf, max_decompressed_bytes=50_000)


def test_gzip_accepts_zlib_streams_only_as_corrupt() -> None:
    with pytest.raises(CorruptRecordError):
        decompress(CompressionType.GZIP, zlib.compress(PAYLOAD))
