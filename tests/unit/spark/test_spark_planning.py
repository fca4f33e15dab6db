"""Admission control and offset resolution, without Spark or a broker."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from riverbed.protocol.topic_partition import TopicPartition
from riverbed.spark.offsets import from_offsets_dict, to_offsets_dict
from riverbed.spark.options import PartitionTimestamps, parse_source_options
from riverbed.spark.planning import offset_ranges, rate_limit
from riverbed.spark.reader import _Planner

backlogs = st.dictionaries(
    st.builds(TopicPartition, st.sampled_from(["a", "b"]), st.integers(0, 5)),
    st.tuples(st.integers(0, 1000), st.integers(0, 1000)),
    min_size=1,
)


@given(backlogs, st.integers(1, 2000))
def test_rate_limit_invariants(
    ranges: dict[TopicPartition, tuple[int, int]], max_rows: int
) -> None:
    start = {tp: s for tp, (s, _) in ranges.items()}
    latest = {tp: s + n for tp, (s, n) in ranges.items()}
    end = rate_limit(start, latest, max_rows)
    admitted = sum(end[tp] - start[tp] for tp in start)
    total = sum(latest[tp] - start[tp] for tp in start)
    assert all(start[tp] <= end[tp] <= latest[tp] for tp in start)
    assert admitted == min(total, max_rows)
    ranges_planned = offset_ranges(start, end)
    assert sum(r.size for r in ranges_planned) == admitted
    assert [(r.topic, r.partition) for r in ranges_planned] == sorted(
        (tp.topic, tp.partition) for tp in start if end[tp] > start[tp]
    )


def test_rate_limit_splits_in_proportion_to_backlog() -> None:
    a, b = TopicPartition("t", 0), TopicPartition("t", 1)
    assert rate_limit({a: 0, b: 10}, {a: 30, b: 20}, 20) == {a: 15, b: 15}


@given(
    st.dictionaries(
        st.builds(TopicPartition, st.text(min_size=1), st.integers(0, 99)), st.integers(0, 2**62)
    )
)
def test_offsets_dict_round_trips(offsets: dict[TopicPartition, int]) -> None:
    assert from_offsets_dict(to_offsets_dict(offsets)) == offsets


class FakeLookup:
    """Offsets of one partition holding records with timestamps 100, 200, 300 at 0..2."""

    def partition_counts(self) -> dict[str, int]:
        return {"t": 1}

    def earliest(self, partitions: object) -> dict[TopicPartition, int]:
        return dict.fromkeys(partitions, 0)  # type: ignore[call-overload, no-any-return]

    def latest(self, partitions: object) -> dict[TopicPartition, int]:
        return dict.fromkeys(partitions, 3)  # type: ignore[call-overload, no-any-return]

    def for_timestamps(
        self, timestamps: dict[TopicPartition, int]
    ) -> dict[TopicPartition, int | None]:
        return {
            tp: next((i for i, t in enumerate([100, 200, 300]) if t >= ts), None)
            for tp, ts in timestamps.items()
        }


def test_starting_timestamp_resolves_to_first_offset_at_or_after_it() -> None:
    options = parse_source_options(
        {"kafka.bootstrap.servers": "x:1", "subscribe": "t", "startingTimestamp": "150"},
        streaming=True,
    )
    planner = _Planner(options)
    planner._lookup = FakeLookup()  # type: ignore[assignment]
    tp = TopicPartition("t", 0)
    assert planner.resolve(options.starting, {tp}, start=True) == {tp: 1}
    by_partition = PartitionTimestamps(((tp, 300),))
    assert planner.resolve(by_partition, {tp}, start=True) == {tp: 2}
