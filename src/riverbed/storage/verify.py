"""Verify record batches before they are served, once per process (the serving watermark).

A start after a clean shutdown, and the segments below the recovery point after an
unclean one, are loaded without reading their batches.  Each
:class:`~riverbed.storage.segment.LogSegment` therefore owns a :class:`SegmentVerifier`:
``verified_to`` is a byte position below which every batch was verified by this process
— magic, batch length within the segment, CRC-32C, base offsets increasing, inside the
segment and below the next batch's base offset (base offsets lie outside the CRC, so a
batch counts only once its successor agrees).  Recovery's CRC-checked rebuild and this
process's appends advance it directly, so tailing reads verify nothing; reading an old
segment verifies it from its start once, 1 MiB at a time.

A batch that fails is never served: reads stop before it, and any read that reaches it
raises CorruptSegmentError naming the file and byte (KAFKA_STORAGE_ERROR on the wire),
logged once at ERROR.  A walk never ends early at a bad header, so a damaged length or
base offset cannot hide the records after it; an offset-index entry that disagrees with
the verified log is logged and bypassed.

Not thread-safe: called under the owning log's lock, like the segment.  Readers outside
it (the cleaner) use :meth:`LogSegment.scan_checked` instead and leave this state alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal, NoReturn

from riverbed.errors import CorruptRecordError, CorruptSegmentError
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader, validate_batch

if TYPE_CHECKING:
    from riverbed.storage.segment import LogSegment

log = logging.getLogger(__name__)

_CHUNK = 1 << 20


class SegmentVerifier:
    """The serving watermark of one segment (see the module docstring)."""

    def __init__(self, segment: LogSegment) -> None:
        self._seg = segment
        self.verified_to = 0  # bytes [0, verified_to) are verified ...
        self.verified_next = segment.base_offset  # ... and end at this offset
        self.corruption: CorruptSegmentError | None = None
        self.corrupt_at = -1

    def mark_verified(self, end: int, next_offset: int) -> None:
        """``[0, end)`` was checked by other means (recovery's CRC rebuild)."""
        self.verified_to, self.verified_next = end, next_offset

    def appended(self, position: int, end: int, next_offset: int) -> None:
        """The process appended ``[position, end)``, validated on the way in."""
        if self.verified_to == position:
            self.verified_to, self.verified_next = end, next_offset

    def truncated(self, size: int, next_offset: int) -> None:
        """The segment was cut to ``size`` bytes, ending at ``next_offset``."""
        if self.verified_to >= size:
            self.verified_to, self.verified_next = size, next_offset
        if self.corrupt_at >= size:
            self.corruption, self.corrupt_at = None, -1

    def locate(self, offset: int) -> tuple[int, BatchHeader] | None:
        """Like :meth:`LogSegment.locate`, but every batch walked is verified first (see
        :meth:`verify_through`) and a bad index entry is detected, so corruption raises
        CorruptSegmentError instead of ending the walk early and hiding records.

        None means: every batch of the segment was walked and none reaches ``offset``.
        """
        entry = self._seg.offset_index.floor(offset)
        if entry is not None and entry[1] <= self.verified_to:
            found = self._walk(entry[1], entry[0], offset)
            if found is not False:
                return found
            log.warning(
                "offset index of %s disagrees with its verified log at offset %d; "
                "dropping its entries from there",
                self._seg.log_path,
                entry[0],
            )
            self._seg.offset_index.truncate_to(entry[0])  # derived data: lookups fall back
        elif offset >= self.verified_next:
            # every verified batch ends below ``offset``: continue from the watermark
            found = self._walk(self.verified_to, None, offset)
            if found is not False:
                return found
        found = self._walk(0, None, offset)
        if found is False:
            self._fail(0, "verified batches changed on disk")
        return found

    def _walk(
        self, start: int, key: int | None, offset: int
    ) -> tuple[int, BatchHeader] | Literal[False] | None:
        """Walk batches from ``start`` (expected base offset ``key``); False when the
        walk is inconsistent with the verified prefix (a bad index entry)."""
        pos = start
        while pos < self._seg.size:
            if pos >= self.verified_to:
                if pos != self.verified_to:
                    return False
                self.verify_through(pos + 1)  # this batch; up to 1 MiB more if intact
            try:
                header = BatchHeader.parse(self._seg.pread(pos, HEADER_SIZE))
            except CorruptRecordError:
                return False
            if header.batch_length < HEADER_SIZE - 12 or (
                key is not None and header.base_offset != key
            ):
                return False
            key = None
            if header.last_offset >= offset:
                return pos, header
            pos += header.size
        return None

    def verify_through(self, end: int) -> None:
        """Verify whole batches from the watermark until it reaches ``end`` (or the
        segment's end): magic, length in range, CRC-32C, base offsets increasing and
        inside the segment.  Each byte is verified once per process.  A batch that fails
        and starts below ``end`` raises CorruptSegmentError (logged once at ERROR), now
        and for every later read reaching it; batches before it stay servable.  Whatever
        else the same read brought in (up to 1 MiB) is verified opportunistically."""
        if self.corruption is not None and end > self.corrupt_at:
            raise self.corruption
        end = min(end, self._seg.size)
        while self.verified_to < end:
            pos = self.verified_to
            chunk = self._seg.pread(pos, min(_CHUNK, self._seg.size - pos))
            off = 0
            while off + HEADER_SIZE <= len(chunk):
                checked = self._check_header(chunk, off, pos + off)
                if isinstance(checked, BatchHeader) and off + checked.size > len(chunk):
                    if off:
                        break  # read the batch from its start in the next chunk
                    chunk = self._seg.pread(pos, checked.size)
                if isinstance(checked, BatchHeader):
                    try:
                        validate_batch(chunk, off)
                    except CorruptRecordError as exc:
                        checked = str(exc)
                    else:
                        checked = self._check_successor(chunk, off, pos + off, checked)
                if isinstance(checked, str):
                    if pos + off < end:
                        self._fail(pos + off, checked)
                    return
                off += checked.size
                self.verified_to, self.verified_next = pos + off, checked.next_offset
            if off == 0 and self.verified_to < end:
                self._fail(pos, f"only {len(chunk)} bytes left, less than a batch header")

    def _check_successor(
        self, chunk: bytes, off: int, pos: int, header: BatchHeader
    ) -> BatchHeader | str:
        """Base offsets are outside the CRC: a batch counts as verified only once the
        next batch's base offset (when there is one) is above its last offset."""
        after = pos + header.size
        if after + HEADER_SIZE > self._seg.size:
            return header
        start = off + header.size
        head = (
            chunk[start : start + HEADER_SIZE]
            if start + HEADER_SIZE <= len(chunk)
            else self._seg.pread(after, HEADER_SIZE)
        )
        try:
            following = BatchHeader.parse(head)
        except CorruptRecordError:
            return header  # the next batch fails on its own turn
        if following.base_offset <= header.last_offset:
            return (
                f"base offsets out of order: this batch holds {header.base_offset}.."
                f"{header.last_offset}, the next one (byte {after}) starts at "
                f"{following.base_offset}"
            )
        return header

    def _check_header(self, chunk: bytes, off: int, pos: int) -> BatchHeader | str:
        """The header at ``chunk[off:]`` (file position ``pos``), or why it is invalid."""
        try:
            header = BatchHeader.parse(chunk, off)
        except CorruptRecordError as exc:
            return str(exc)
        if header.magic != 2:
            return f"magic {header.magic}"
        if header.batch_length < HEADER_SIZE - 12 or pos + header.size > self._seg.size:
            return (
                f"batch length {header.batch_length} out of range (segment of "
                f"{self._seg.size} bytes)"
            )
        if (
            header.last_offset_delta < 0
            or header.base_offset < self.verified_next
            or (header.last_offset >= self._seg.next_offset)
        ):
            return (
                f"offsets {header.base_offset}..{header.last_offset} not after "
                f"{self.verified_next - 1} and below {self._seg.next_offset}"
            )
        return header

    def _fail(self, position: int, reason: str) -> NoReturn:
        exc = CorruptSegmentError(
            f"corrupt record batch in {self._seg.log_path} at byte {position}: {reason}; "
            "it is not served"
        )
        log.error("%s", exc)
        self.corruption, self.corrupt_at = exc, position
        raise exc

    def read(self, position: int, max_bytes: int, *, min_one_batch: bool) -> bytes:
        """:meth:`LogSegment.read`, cut before the first batch that fails :meth:`verify_through`;
        raises CorruptSegmentError when the first batch itself fails."""
        data = self._seg.read(position, max_bytes, min_one_batch=min_one_batch)
        try:
            self.verify_through(position + len(data))
        except CorruptSegmentError:
            if self.corrupt_at <= position:
                raise
            return data[: self.corrupt_at - position]
        return data
