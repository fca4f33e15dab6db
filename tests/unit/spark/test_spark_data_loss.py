"""The failOnDataLoss rule that the driver's planner and reading tasks share."""

from __future__ import annotations

import logging

import pytest

from riverbed.errors import OffsetOutOfRangeError
from riverbed.spark.data_loss import deleted_records_message, handle_data_loss


def test_message_names_the_partition_and_the_lost_range() -> None:
    # [0 1 2 3 | 4 5 6 7 | 8 9]   wanted 4, log start moved to 8: [4, 8) is gone
    assert deleted_records_message("t", 0, 4, 8) == (
        "t-0: records [4, 8) were deleted before the query read them (log start offset 8)"
    )
    assert deleted_records_message("t", 1, 9, 9, 12) == (
        "t-1: records from offset 9 were deleted before the query read them "
        "(log start offset 9, end 12)"
    )


def test_fail_on_data_loss_raises_with_the_way_out() -> None:
    with pytest.raises(OffsetOutOfRangeError, match=r"^lost; .*Set failOnDataLoss=false"):
        handle_data_loss("lost", fail_on_data_loss=True)


def test_without_fail_on_data_loss_a_warning_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="riverbed.spark"):
        handle_data_loss("lost", fail_on_data_loss=False)
    assert caplog.messages == ["lost; skipping (failOnDataLoss=false)"]
