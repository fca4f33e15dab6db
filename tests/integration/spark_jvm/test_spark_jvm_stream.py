"""readStream/writeStream with format("riverbed-jvm"): the MicroBatchStream source and the
JVM sink, in the one driver run of conftest.py (cases ``stream_*``, ``err_stream_*``,
``err_sink_*``).

The stream read of a topic in micro-batches (``maxOffsetsPerTrigger``) returns the rows of
the batch read; a query restarted on its checkpoint reads only what came after, once (and
a topic matching ``subscribePattern`` created meanwhile from its beginning); the
sink writes every input row (key, value, partition, headers); bad options and columns fail
with one line.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from .conftest import Data

Results = tuple[Data, dict[str, dict[str, Any]]]


def outcome(results: Results, name: str) -> dict[str, Any]:
    found = results[1][name]
    assert "error" not in found, f"{name}: {found}"
    return found


def test_stream_read_in_micro_batches_equals_the_batch_read(results: Results) -> None:
    stream = outcome(results, "stream_all")
    assert stream["rows"] == outcome(results, "jvm_all")["rows"]
    assert len(stream["rows"]) == 90
    assert stream["batches"] >= 3  # 90 records, at most 40 a micro-batch


def test_restart_from_the_checkpoint_goes_on_without_loss_or_repeat(results: Results) -> None:
    stream = outcome(results, "stream_restart")
    values = [row[1] for row in stream["rows"]]
    expected = [f"first-{i}" for i in range(30)] + [f"more-{i}" for i in range(12)]
    assert Counter(values) == Counter(expected)
    for partition in (0, 1):
        offsets = [row[4] for row in stream["rows"] if row[3] == partition]
        assert offsets == list(range(21))
    assert stream["batches"] >= 5  # 30 then 12 records, at most 10 a micro-batch


def test_a_topic_created_later_is_read_from_its_beginning(results: Results) -> None:
    """subscribePattern: a topic matching it, created after the checkpointed batches."""
    data, found = results[0], outcome(results, "stream_new_topic")
    values = Counter(row[1] for row in found["rows"])
    assert values == Counter([f"old-{i}" for i in range(5)] + [f"new-{i}" for i in range(12)])
    assert {row[2] for row in found["rows"]} == {data.grow_prefix + "old", data.grow_prefix + "new"}


def test_sink_writes_every_input_row(results: Results) -> None:
    outcome(results, "stream_to_sink")

    def written(rows: list[list[Any]]) -> Counter[str]:
        return Counter(repr((r[0], r[1], r[3], r[7])) for r in rows)

    out = outcome(results, "jvm_sink_out")["rows"]
    assert written(out) == written(outcome(results, "jvm_all")["rows"])


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("stream_ending", "endingOffsets/endingTimestamp are not valid in streaming queries"),
        ("sink_unknown", "unknown option 'bogus' for writing format 'riverbed-jvm'"),
        ("sink_column", "column 'offset' cannot be written to Kafka"),
        ("sink_no_topic", "set the 'topic' option or provide a 'topic' column"),
        ("sink_exactly_once", "option 'deliveryGuarantee' must be at_least_once"),
    ],
)
def test_bad_stream_options_fail_with_one_line(results: Results, case: str, message: str) -> None:
    found = results[1][f"err_{case}"]
    assert "error" in found, found
    assert found["error"].startswith("IllegalArgumentException: "), found
    assert message in found["error"]
    assert "\n" not in found["error"]
