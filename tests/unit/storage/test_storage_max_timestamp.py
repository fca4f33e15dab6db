"""ListOffsets -3 (max timestamp) against a brute-force answer, on logs of many shapes."""

from __future__ import annotations

from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from riverbed.protocol.records import SimpleRecord, build_batch
from riverbed.storage import LogConfig, PartitionLog
from riverbed.storage.timestamps import offset_of_max_timestamp

# A log is a list of batches; a batch is (codec, record timestamps).
batches_st = st.lists(
    st.tuples(
        st.sampled_from([0, 1, 4]),  # none, gzip, zstd
        st.lists(st.integers(0, 50), min_size=1, max_size=6),
    ),
    max_size=12,
)


@settings(max_examples=30, deadline=None)
@given(batches=batches_st, segment_bytes=st.sampled_from([200, 600, 1 << 20]))
def test_first_record_with_the_largest_timestamp(
    batches: list[tuple[int, list[int]]], segment_bytes: int
) -> None:
    config = LogConfig(segment_bytes=segment_bytes)
    with TemporaryDirectory() as tmp:
        directory = Path(tmp) / "t-0"
        plog = PartitionLog.open(directory, config)
        stamps: list[int] = []
        try:
            for codec, timestamps in batches:
                records = [SimpleRecord(key=None, value=b"v", timestamp=ts) for ts in timestamps]
                plog.append(build_batch(records, compression=codec))
                stamps += timestamps
            expected = None
            if stamps:
                top = max(stamps)
                expected = (stamps.index(top), top)
            assert offset_of_max_timestamp(plog.segments()) == expected
        finally:
            plog.close()
        # Reopened: segment maxima are rebuilt from the time index, a coarser hint.
        plog = PartitionLog.open(directory, config)
        try:
            assert offset_of_max_timestamp(plog.segments()) == expected
        finally:
            plog.close()
