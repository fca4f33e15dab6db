"""TemporalKeyState: the enrich example's per-user versions and held activities.

::

    versions   c@0 (ann)      u@10 (bob)     d@20      c@30 (cy)
               [0 ───── 10)   [10 ──── 20)   [20─30)   [30 ──▶
"""

from __future__ import annotations

from riverbed.pipelines.temporal_table import TemporalKeyState

ANN, BOB, CY = {"name": '"ann"'}, {"name": '"bob"'}, {"name": '"cy"'}


def history() -> TemporalKeyState:
    state = TemporalKeyState()
    # applied out of order on purpose: a change may arrive late
    state.apply_change(30, 0, 4, CY)
    state.apply_change(0, 0, 1, ANN)
    state.apply_change(20, 0, 3, None)
    state.apply_change(10, 0, 2, BOB)
    return state


def test_row_at_inclusive_start_exclusive_end() -> None:
    state = history()
    assert state.row_at(-1) is None
    assert state.row_at(0) == ANN
    assert state.row_at(9) == ANN
    assert state.row_at(10) == BOB
    assert state.row_at(20) is None
    assert state.row_at(29) is None
    assert state.row_at(30) == CY
    assert state.row_at(10**15) == CY


def test_equal_timestamps_later_topic_position_wins() -> None:
    state = TemporalKeyState()
    state.apply_change(5, 0, 8, BOB)
    state.apply_change(5, 0, 7, ANN)
    assert state.row_at(5) == BOB
    assert state.row_at(4) is None


def test_replayed_change_is_not_a_second_version() -> None:
    state = history()
    state.apply_change(10, 0, 2, BOB)
    assert len(state.versions) == 4


def test_release_holds_events_until_the_watermark_passes() -> None:
    state = TemporalKeyState(pending=[{"ts": 12}, {"ts": 5}, {"ts": 10}])
    assert state.next_timeout_ms() == 5
    assert state.release(10) == [{"ts": 5}]
    assert state.release(11) == [{"ts": 10}]
    assert state.next_timeout_ms() == 12
    assert state.release(13) == [{"ts": 12}]
    assert state.next_timeout_ms() is None


def test_prune_keeps_the_version_valid_at_the_watermark() -> None:
    state = history()
    state.prune(25)
    assert [v[0] for v in state.versions] == [20, 30]
    assert state.row_at(25) is None and state.row_at(31) == CY


def test_json_round_trip() -> None:
    state = history()
    state.pending.append({"ts": 3, "user_id": "1", "action": '"x"'})
    again = TemporalKeyState.from_json(state.to_json())
    assert again == state
    assert TemporalKeyState.from_json(None) == TemporalKeyState()
