"""AuthorState: one author's part of the timeline view; only changed pairs are emitted."""

from __future__ import annotations

from riverbed.pipelines.timeline_view import AuthorState

A, B = ('"a"', 1), ('"b"', 2)


def test_new_follower_gets_every_tweet_new_tweet_goes_to_every_follower() -> None:
    state = AuthorState()
    assert state.apply([(10, A)], [(100, True)]) == [(100, 10, A)]
    assert state.apply([(11, B)], [(101, True)]) == [(100, 11, B), (101, 10, A), (101, 11, B)]


def test_unchanged_pairs_are_not_re_emitted() -> None:
    state = AuthorState()
    state.apply([(10, A)], [(100, True)])
    assert state.apply([(10, A)], [(100, True)]) == []


def test_update_delete_and_unfollow() -> None:
    state = AuthorState()
    state.apply([(10, A), (11, B)], [(100, True), (101, True)])
    assert state.apply([(10, B)], []) == [(100, 10, B), (101, 10, B)]
    assert state.apply([(11, None)], []) == [(100, 11, None), (101, 11, None)]
    assert state.apply([], [(101, False)]) == [(101, 10, None)]
    assert state.tweets == {10: B} and state.followers == {100}


def test_changes_that_cancel_within_a_batch_emit_nothing() -> None:
    state = AuthorState()
    state.apply([(10, A)], [(100, True)])
    assert state.apply([], [(100, False), (100, True)]) == []
    assert state.apply([(12, A), (12, None)], []) == []


def test_never_emitted_pair_gets_no_tombstone() -> None:
    state = AuthorState()
    state.apply([(10, A)], [])
    assert state.apply([(10, None)], [(100, True)]) == []


def test_json_round_trip() -> None:
    state = AuthorState()
    state.apply([(10, A), (11, (None, None))], [(100, True)])
    assert AuthorState.from_json(state.to_json()) == state
