"""Loading a partition directory after a clean or unclean stop (Kafka's ``LogLoader``).

Steps, in order:

1. Finish or roll back interrupted file operations, by suffix:
   ``*.cleaned`` (compaction output not yet committed), ``*.tmp`` and ``*.deleted``
   (segments already retired, see :mod:`riverbed.storage.deletion`) are deleted.  A
   ``<base>.log.swap`` is committed compaction output that replaces a *group* of
   segments: it covers offsets ``[base, next)`` where ``next`` is the group's end, read
   from ``<base>.swapend`` (written before the swap; the cleaner may drop a group's
   last batch when nothing in it survives) or, for swaps written before that file
   existed, one past the swap's last batch.  Every ``.log`` whose base offset lies in
   that range is deleted
   with its indexes, then the swap is renamed to ``<base>.log`` (its indexes are
   rebuilt at load), after ``<base>.txnindex.swap`` (the group's aborted transactions,
   written before the log swap) is renamed to ``<base>.txnindex``.  A
   ``.txnindex.swap`` without its log swap (a crash before the commit point) is deleted.
2. Open every ``<20 digits>.log`` in base-offset order.  Index files (``.index``,
   ``.timeindex``, ``.txnindex``) without a log are deleted.
3. After a clean shutdown every segment is trusted: the active (last) one's indexes are
   loaded if consistent (else rebuilt); every sealed one is opened lazily
   (:meth:`LogSegment.open_lazily`: its index files' first and last entries and the batch
   headers after the last entry, so a start is O(segments), not O(bytes); the files are
   read on first use, as Kafka's ``LazyIndex``).  After an unclean stop the segments
   wholly below the recovery point are opened the same way, and those that may hold
   offsets at or above it are CRC-checked batch by batch and re-indexed: from the start
   of a sealed one, and in the last segment from its last index entry at or below the
   recovery point (:meth:`LogSegment.recover`), so a restart after ``kill -9`` reads
   what was written since the last checkpoint (about a second of writes), not the whole
   active segment.

   The *acknowledged bound* is the larger of ``partition.checkpoint``'s recovery point
   and the offset of ``flushed.mark`` (:mod:`riverbed.storage.flush_mark`), plus the
   mark's byte position when it names the last segment.  Everything below it was
   fsynced, so:

   * an invalid batch at or after the bound is a torn write: it and everything after it
     are truncated (WARNING).  Usually in the last segment; in an earlier one when the
     crash came between a roll and that segment's fsync (a roll leaves the fsync to the
     flusher, and the recovery point never passes a segment before its fsync), and then
     the later segments, which hold only offsets after the tear, are deleted too;
   * an invalid batch *below* the bound (in a segment wholly below it, found before any
     file is touched), or a log that ends below the bound is corruption of acknowledged
     data:
     CorruptSegmentError naming the file and byte position.  Nothing is cut; the caller
     (:meth:`PartitionLog.open`) takes the partition offline.

   *Zero tails* (pre-zeroed space, :mod:`riverbed.storage.preallocate`): the active
   segment keeps zeros after its logical end, and a segment sealed by a roll keeps them
   until the flusher cuts its file before the roll fsync.  So after a crash, a segment
   above the recovery point may end with zeros after its last valid batch.  When every
   byte from the last valid batch's end to the end of the file is zero, at or after the
   bound, that tail is preallocated space, not a tear:

   * it is cut (INFO, no WARNING) and the file fsynced;
   * in a segment that is not the last, when its last valid batch ends exactly at the
     next segment's base offset (contiguous offsets: the roll's segment was complete,
     only its truncate was not yet durable), the later segments are kept;
   * when the offsets are not contiguous (a batch that never reached the disk reads as
     zeros too), it is a torn write by the rule above: WARNING, later segments deleted;
   * zeros where the bound says data was fsynced (below it) stay corruption: the zero
     check is made only after the bound check passed.

   A torn batch followed by zeros is not all zeros: a torn write, as before.

   The same holds for a sealed segment the bound covers (trusted, or wholly
   acknowledged): it can be flushed to its end while still active (the bound then equals
   the next segment's base) and rolled, the roll's truncate never made durable.  When
   its check fails only because zeros follow batches that end exactly at the next
   segment's base offset, the zeros are cut (INFO); any other damage there is
   corruption as before.

The result is a list of loaded segments (never empty).  Segments loaded as trusted are
not CRC-checked here: their batches are verified before they are first served
(:meth:`LogSegment.locate_verified`).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from riverbed.errors import CorruptRecordError, CorruptSegmentError
from riverbed.protocol.batch import HEADER_SIZE, BatchHeader
from riverbed.storage.atomic_file import fsync_dir
from riverbed.storage.checkpoint import PartitionCheckpoint
from riverbed.storage.flush_mark import FlushMark, read_flush_mark
from riverbed.storage.segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_name,
)
from riverbed.storage.txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SWAP_END_SUFFIX = ".swapend"
"""``<base>.swapend``: the end offset of the segment group a ``<base>.log.swap`` replaces
(decimal), written (fsynced) before the swap's commit point."""


def finish_interrupted_operations(directory: Path) -> None:
    """Step 1 of the module docstring."""
    changed = False
    swaps: list[Path] = []
    for path in sorted(directory.iterdir()):
        name = path.name
        if name.endswith((CLEANED_SUFFIX, ".tmp", DELETED_SUFFIX)):
            path.unlink(missing_ok=True)
            changed = True
        elif name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            swaps.append(path)
    for swap in swaps:
        stem = swap.name[: -len(LOG_SUFFIX + SWAP_SUFFIX)]
        if not (stem.isdigit() and len(stem) == 20):
            continue
        base = int(stem)
        end = max(swap_next_offset(swap, base), base + 1, _swap_end(directory, stem))
        for old in segment_bases(directory):
            if base <= old < end:
                _delete_segment_files(directory, old)
        txn_swap = directory / (stem + TXN_INDEX_SUFFIX + SWAP_SUFFIX)
        if txn_swap.exists():
            os.replace(txn_swap, directory / (stem + TXN_INDEX_SUFFIX))
        os.replace(swap, directory / (stem + LOG_SUFFIX))
        changed = True
    for orphan in directory.glob("*" + TXN_INDEX_SUFFIX + SWAP_SUFFIX):
        orphan.unlink(missing_ok=True)
        changed = True
    for done in directory.glob("*" + SWAP_END_SUFFIX):  # its swap is committed or gone
        done.unlink(missing_ok=True)
        changed = True
    if changed:
        fsync_dir(directory)


def _swap_end(directory: Path, stem: str) -> int:
    """The group end recorded beside a swap (0 when absent or unreadable: older swaps
    always end with the group's last batch)."""
    try:
        return int((directory / (stem + SWAP_END_SUFFIX)).read_text().strip())
    except (OSError, ValueError):
        return 0


def swap_next_offset(path: Path, base: int) -> int:
    """One past the last offset of the batches in ``path`` (``base`` when it has none)."""
    end = base
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pos = 0
        while pos + HEADER_SIZE <= size:
            try:
                header = BatchHeader.parse(os.pread(f.fileno(), HEADER_SIZE, pos))
            except CorruptRecordError:
                break
            if header.batch_length <= 0:
                break
            end = header.next_offset
            pos += header.size
    return end


def _delete_segment_files(directory: Path, base: int) -> None:
    stem = segment_name(base)
    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        (directory / (stem + suffix)).unlink(missing_ok=True)


def segment_bases(directory: Path) -> list[int]:
    bases = []
    for path in directory.glob("*" + LOG_SUFFIX):
        stem = path.name[: -len(LOG_SUFFIX)]
        if stem.isdigit() and len(stem) == 20:
            bases.append(int(stem))
    return sorted(bases)


def _delete_orphan_indexes(directory: Path, bases: list[int]) -> None:
    known = {segment_name(b) for b in bases}
    for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
        for path in directory.glob("*" + suffix):
            if path.name[: -len(suffix)] not in known:
                path.unlink(missing_ok=True)


def load_segments(
    directory: Path,
    checkpoint: PartitionCheckpoint,
    *,
    clean: bool,
    index_interval_bytes: int,
    now_ms: int,
) -> list[LogSegment]:
    """Open and, where needed, recover every segment of ``directory`` (see module doc).

    The directory is fsynced at the end when its entries may have changed in a way that
    matters after a crash: a first segment created, segments deleted after a torn tail,
    or any unclean load.  A clean load of existing segments changes no entry that
    recovery depends on (a rebuilt index is rebuilt again), so a clean restart costs no
    directory fsync per partition."""
    finish_interrupted_operations(directory)
    bases = segment_bases(directory)
    entries_changed = not clean or not bases
    _delete_orphan_indexes(directory, bases)
    mark = read_flush_mark(directory)
    bound = max(checkpoint.recovery_point, mark.offset if mark is not None else 0)
    if not bases:
        if bound > checkpoint.log_start_offset:
            raise CorruptSegmentError(
                f"{directory} has no segment but offsets below {bound} were acknowledged "
                "(fsynced): the log files are missing"
            )
        bases = [checkpoint.log_start_offset]
    segments: list[LogSegment] = []
    try:
        for i, base in enumerate(bases):
            seg = LogSegment.open(
                directory, base, index_interval_bytes=index_interval_bytes, created_ms=now_ms
            )
            segments.append(seg)
            next_base = bases[i + 1] if i + 1 < len(bases) else None
            unflushed = next_base is None or next_base > checkpoint.recovery_point
            if clean or not unflushed:
                # sealed segments: O(1), index files read on first use
                if next_base is None or not seg.open_lazily(next_base):
                    _load_sealed(seg, next_base, trusted=True)
            elif next_base is not None and next_base <= bound:
                # wholly acknowledged: any damage is corruption
                _load_sealed(seg, next_base, trusted=False)
            else:
                cut = _recover_last(
                    seg,
                    checkpoint.recovery_point,
                    bound,
                    mark if next_base is None else None,
                    next_base,
                )
                if next_base is not None and cut == _TORN:
                    # A torn sealed segment above the recovery point: its roll's fsync
                    # never happened.  Nothing after the tear was acknowledged.
                    for later in bases[i + 1 :]:
                        log.warning(
                            "deleting %s%s: it follows the torn tail of %s",
                            segment_name(later),
                            LOG_SUFFIX,
                            seg.log_path,
                        )
                        _delete_segment_files(directory, later)
                        entries_changed = True
                    break
            if next_base is not None and seg.next_offset > next_base:
                raise CorruptSegmentError(
                    f"segment {seg.log_path} holds offsets up to {seg.next_offset - 1}, "
                    f"overlapping the next segment at {next_base}"
                )
        end = segments[-1].next_offset
        if end < bound:
            raise CorruptSegmentError(
                f"log {directory} ends at offset {end} (segment {segments[-1].log_path}, "
                f"{segments[-1].size} bytes) but offsets below {bound} were acknowledged "
                "(fsynced): acknowledged data is missing"
            )
    except BaseException:
        for seg in segments:
            seg.close()
        raise
    if entries_changed:
        fsync_dir(directory)
    return segments


def _load_sealed(seg: LogSegment, next_base: int | None, *, trusted: bool) -> None:
    """``load_trusted`` (``trusted``) or a CRC-checked ``rebuild(sealed=True)`` of a
    segment the bound covers; a CorruptSegmentError stands unless the damage is a zero
    tail after batches that end exactly at ``next_base`` (module docstring): a segment
    flushed to its end while active and rolled, whose roll fsync (with its truncate)
    never happened before the crash; the tail is then cut (INFO).  Only the error path
    reads the segment a second time."""
    try:
        if trusted:
            seg.load_trusted(next_base)
        else:
            seg.rebuild(sealed=True)
    except CorruptSegmentError:
        if next_base is None or not _zero_tail_after(seg, next_base):
            raise  # the files are left as they are
        valid = seg.rebuild(sealed=False)
        _cut_zeros(seg, valid)


def _zero_tail_after(seg: LogSegment, next_base: int) -> bool:
    """True if ``seg``'s CRC-valid batches end exactly at offset ``next_base`` and only
    zeros follow them to the file's end; reads only (nothing is rewritten)."""
    valid, next_offset = 0, seg.base_offset
    for pos, header in seg.scan(0, verify=True):
        valid, next_offset = pos + header.size, header.next_offset
    return valid < seg.size and next_offset == next_base and seg.zeros_from(valid)


def _cut_zeros(seg: LogSegment, valid: int) -> None:
    log.info(
        "cutting %d bytes of preallocated zeros after byte %d of %s (offset %d)",
        seg.size - valid,
        valid,
        seg.log_path,
        seg.next_offset,
    )
    seg.truncate_bytes(valid)
    seg.fsync()


_INTACT, _ZEROS, _TORN = "intact", "zeros", "torn"
"""What :func:`_recover_last` found after the segment's last valid batch: nothing; only
preallocated zeros (offsets contiguous with the next segment, if any), cut; a torn
tail (or zeros with an offset gap before the next segment), cut."""


def _recover_last(
    seg: LogSegment,
    recovery_point: int,
    bound: int,
    mark: FlushMark | None,
    next_base: int | None = None,
) -> str:
    """CRC-check a segment reaching past the bound; cut a torn tail or a zero tail
    (module docstring), refuse damage below it.  Returns :data:`_INTACT`,
    :data:`_ZEROS` or :data:`_TORN`; ``next_base`` is the next segment's base offset
    (None for the last segment).

    Only the batches from (about) the checkpoint's recovery point on are read
    (:meth:`LogSegment.recover`); damage found below the flushed position is confirmed
    by a check of the whole segment (the old way, so the error names the first bad
    byte).  ``mark`` is given only for the last segment: an earlier one may have been
    compacted since the mark was written (same offsets, fewer bytes), so there only the
    offset bound holds."""
    valid = seg.recover(recovery_point)
    if valid == seg.size:
        return _INTACT
    position = mark.position if mark is not None and mark.segment_base == seg.base_offset else 0
    if valid < position or seg.next_offset < bound:
        valid = seg.rebuild(sealed=False)
        if valid == seg.size:
            return _INTACT
    if valid < position or seg.next_offset < bound:
        raise CorruptSegmentError(
            f"corrupt record batch in {seg.log_path} at byte {valid} ({seg.describe_end()}), "
            f"below the flushed position (offset {bound}, byte "
            f"{position}): acknowledged, fsynced data is damaged; refusing to truncate it"
        )
    if seg.zeros_from(valid) and (next_base is None or seg.next_offset == next_base):
        _cut_zeros(seg, valid)
        return _ZEROS
    log.warning(
        "truncating torn tail of %s: %d bytes after byte %d (beyond the flushed "
        "position: offset %d, byte %d)",
        seg.log_path,
        seg.size - valid,
        valid,
        bound,
        position,
    )
    seg.truncate_bytes(valid)
    seg.fsync()
    return _TORN
