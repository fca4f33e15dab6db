"""Record batch compression codecs: none, gzip, snappy, lz4 and zstd (Kafka ids 0-4).

A compressed v2 batch compresses the records section as one unit (everything after the
61-byte header).  The formats on the wire are Kafka's:

- **gzip** (1): a gzip stream (RFC 1952), possibly several members; stdlib :mod:`zlib`.
- **snappy** (2): either raw snappy (one block with its varint length preamble) or the
  *xerial* framing that Kafka's Java client (snappy-java ``SnappyOutputStream``) writes::

      magic    8 bytes  0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
      version  int32    1
      compat   int32    1
      blocks   repeated: int32 compressed length, raw snappy block

  Decoding accepts both; encoding writes xerial (what every Kafka client can read).  Via
  :mod:`cramjam`.
- **lz4** (3): the LZ4 *frame* format with independent 64 KiB blocks and no stored content
  size (Kafka's ``Lz4BlockOutputStream``); via :mod:`lz4.frame`.
- **zstd** (4): one or more zstd frames; via :mod:`zstandard`.

Decompression is bounded: output beyond ``max_size`` bytes raises
:class:`~riverbed.errors.CorruptRecordError` before more memory is allocated (a
decompression bomb is refused, not buffered), and so do malformed or truncated inputs.
An unknown codec id raises :class:`~riverbed.errors.UnsupportedCompressionError`.
Stateless module-level functions; safe to call from any thread.
"""

from __future__ import annotations

import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from riverbed.errors import CorruptRecordError, UnsupportedCompressionError

DEFAULT_MAX_DECOMPRESSED_BYTES = 64 * 1024 * 1024
"""Default bound on the decompressed records of one batch (64 MiB)."""

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_XERIAL_BLOCK = struct.Struct(">i")
_XERIAL_BLOCK_SIZE = 32 * 1024  # snappy-java's default block size
_ZSTD_MAX_RATIO = 32 * 1024
_ZSTD_MIN_STEP = 64

Buffer = bytes | bytearray | memoryview


class CompressionType(IntEnum):
    """Kafka's codec ids (attributes bits 0-2 of a record batch)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def codec_for(codec_id: int) -> CompressionType:
    """The codec for an id; UnsupportedCompressionError for an unknown one."""
    try:
        return CompressionType(codec_id)
    except ValueError:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec_id}") from None


def compress(codec_id: int, data: Buffer, *, level: int | None = None) -> bytes:
    """Compress ``data`` in Kafka's wire format for ``codec_id``.

    ``level`` is the codec's own level (gzip 1-9, lz4 0-16, zstd 1-22); None picks the
    default Kafka uses.  Snappy has no levels.
    """
    codec = codec_for(codec_id)
    if codec is CompressionType.NONE:
        return bytes(data)
    if codec is CompressionType.GZIP:
        c = zlib.compressobj(6 if level is None else level, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        return c.compress(data) + c.flush()
    if codec is CompressionType.SNAPPY:
        return _xerial_compress(data)
    if codec is CompressionType.LZ4:
        return bytes(
            lz4.frame.compress(
                data,
                compression_level=0 if level is None else level,
                block_size=lz4.frame.BLOCKSIZE_MAX64KB,
                block_linked=False,
                content_checksum=False,
                store_size=False,
            )
        )
    cctx = zstandard.ZstdCompressor(level=3 if level is None else level)
    return bytes(cctx.compress(data))


def decompress(
    codec_id: int, data: Buffer, *, max_size: int = DEFAULT_MAX_DECOMPRESSED_BYTES
) -> bytes:
    """Decompress ``data``; CorruptRecordError if malformed or larger than ``max_size``."""
    codec = codec_for(codec_id)
    if codec is CompressionType.NONE:
        if len(data) > max_size:
            raise _too_large(max_size)
        return bytes(data)
    try:
        if codec is CompressionType.GZIP:
            return _gzip_decompress(data, max_size)
        if codec is CompressionType.SNAPPY:
            return _snappy_decompress(data, max_size)
        if codec is CompressionType.LZ4:
            return _lz4_decompress(data, max_size)
        return _zstd_decompress(data, max_size)
    except CorruptRecordError:
        raise
    except Exception as exc:  # each library has its own error types; all mean bad input
        raise CorruptRecordError(f"{codec.name.lower()} decompression failed: {exc}") from exc


def _too_large(max_size: int) -> CorruptRecordError:
    return CorruptRecordError(f"decompressed records exceed the limit of {max_size} bytes")


def _gzip_decompress(data: Buffer, max_size: int) -> bytes:
    out = bytearray()
    rest: bytes = bytes(data)
    while True:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        out += d.decompress(rest, max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_large(max_size)
        if not d.eof:
            if d.unconsumed_tail:
                raise _too_large(max_size)
            raise CorruptRecordError("gzip stream truncated")
        rest = d.unused_data
        if not rest:
            return bytes(out)
        if len(rest) < 2 or rest[:2] != b"\x1f\x8b":
            raise CorruptRecordError("trailing garbage after gzip stream")


def _snappy_decompress(data: Buffer, max_size: int) -> bytes:
    view = memoryview(data)
    if len(view) >= _XERIAL_HEADER.size and view[:8] == XERIAL_MAGIC:
        return _xerial_decompress(view, max_size)
    return _snappy_raw_block(view, max_size)


def _snappy_raw_block(block: memoryview, max_size: int) -> bytes:
    declared = int(cramjam.snappy.decompress_raw_len(block))
    if declared > max_size:
        raise _too_large(max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


def _xerial_decompress(view: memoryview, max_size: int) -> bytes:
    out = bytearray()
    pos = _XERIAL_HEADER.size
    end = len(view)
    while pos < end:
        if end - pos < _XERIAL_BLOCK.size:
            raise CorruptRecordError("xerial snappy block length truncated")
        (length,) = _XERIAL_BLOCK.unpack_from(view, pos)
        pos += _XERIAL_BLOCK.size
        if length < 0 or length > end - pos:
            raise CorruptRecordError(f"xerial snappy block length {length} out of bounds")
        block = view[pos : pos + length]
        if int(cramjam.snappy.decompress_raw_len(block)) > max_size - len(out):
            raise _too_large(max_size)
        out += cramjam.snappy.decompress_raw(block)
        pos += length
    return bytes(out)


def _xerial_compress(data: Buffer) -> bytes:
    view = memoryview(data)
    parts = [_XERIAL_HEADER.pack(XERIAL_MAGIC, 1, 1)]
    for start in range(0, len(view), _XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK_SIZE]))
        parts.append(_XERIAL_BLOCK.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _lz4_decompress(data: Buffer, max_size: int) -> bytes:
    d = lz4.frame.LZ4FrameDecompressor()
    out = bytes(d.decompress(data, max_length=max_size + 1))
    if len(out) > max_size:
        raise _too_large(max_size)
    if not d.eof:
        raise CorruptRecordError("lz4 frame truncated")
    if d.unused_data:
        raise CorruptRecordError("trailing garbage after lz4 frame")
    return out


def _zstd_decompress(data: Buffer, max_size: int) -> bytes:
    # A zstd block holds at most 128 KiB and takes at least 4 bytes (an RLE block), so
    # feeding ``n`` input bytes yields at most ``n * 32768`` output bytes: sizing each
    # input slice to the budget left keeps the output within one block of the limit.
    view = memoryview(data)
    if not view:
        raise CorruptRecordError("empty zstd input")
    out = bytearray()
    pos = 0
    end = len(view)
    dctx = zstandard.ZstdDecompressor()  # a context is not thread-safe: one per call
    while pos < end:
        dobj = dctx.decompressobj()
        while not dobj.eof:
            if pos >= end:
                raise CorruptRecordError("zstd frame truncated")
            step = max(_ZSTD_MIN_STEP, (max_size - len(out)) // _ZSTD_MAX_RATIO)
            out += dobj.decompress(view[pos : pos + step])
            pos = min(pos + step, end)
            if len(out) > max_size:
                raise _too_large(max_size)
        pos -= len(dobj.unused_data)
    return bytes(out)
