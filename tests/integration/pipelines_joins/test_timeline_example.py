"""timeline: hand-written cases with known answers (inserts, text updates, tweet deletes,
unfollows, re-follows, a restart) and a seeded differential test against the batch
model; the output topic is folded by key as a compacted topic's reader would."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

from riverbed.pipelines.live_state import read_state

from .conftest import drain, produce
from .joins_model import (
    T0,
    cdc_records,
    envelope,
    fold_compacted,
    follow,
    timeline_changes,
    timeline_view,
    tweet,
)

TWEETS, FOLLOWS = "riverbed.main.tweets", "riverbed.main.follows"


def publish(bs: str, tweets: list[Any], follows: list[Any]) -> None:
    produce(bs, TWEETS, cdc_records(tweets, ("id",)))
    produce(bs, FOLLOWS, cdc_records(follows, ("follower", "followee")))


def value(follower: int, tid: int, author: int, text: Any, ts: int = T0) -> dict[str, Any]:
    return {"follower": follower, "tweet_id": tid, "author": author, "text": text, "ts": ts}


def test_known_answers_and_restart(
    broker: Any, run_example: Any, spark: Any, tmp_path: Path
) -> None:
    bs = broker.bootstrap_servers
    tweets = [tweet("c", 10, 1, "a"), tweet("c", 11, 1, "b"), tweet("c", 20, 2, "c")]
    follows = [follow("c", 100, 1), follow("c", 101, 1), follow("r", 100, 2), follow("c", 102, 3)]
    publish(bs, tweets, follows)
    run_example("timeline", bs)
    first = drain(bs, "timelines")
    assert fold_compacted(first) == {
        (100, 10): value(100, 10, 1, "a"),
        (100, 11): value(100, 11, 1, "b"),
        (101, 10): value(101, 10, 1, "a"),
        (101, 11): value(101, 11, 1, "b"),
        (100, 20): value(100, 20, 2, "c"),
    }
    assert all(v is not None for _, v in first)

    # Restart: delete tweet 11, 101 unfollows 1, tweet 10's text changes, 3 posts tweet 30
    # as 102 moves to 1 (no record for (102, 30): it never existed), 100 unfollows and
    # re-follows 2 in one batch (ends following: no tombstone).
    publish(
        bs,
        [tweet("d", 11, 1), tweet("u", 10, 1, None, T0 + 1), tweet("c", 30, 3, "d")],
        [
            follow("d", 101, 1),
            follow("d", 100, 2),
            follow("c", 100, 2),
            # an update of the pair itself (a surrogate-keyed follows table): 102 now
            # follows 1 instead of 3
            envelope("u", {"follower": 102, "followee": 3}, {"follower": 102, "followee": 1}, T0),
        ],
    )
    run_example("timeline", bs)
    both = drain(bs, "timelines")  # in offset order per partition, partitions interleaved
    assert fold_compacted(both) == {
        (100, 10): value(100, 10, 1, None, T0 + 1),
        (100, 20): value(100, 20, 2, "c"),
        (102, 10): value(102, 10, 1, None, T0 + 1),
    }
    author = read_state(spark, "timeline", tmp_path / "checkpoint", key="1")
    assert author == [
        {"key": "1", "tweets": {"10": {"text": None, "ts": T0 + 1}}, "followers": [100, 102]}
    ]
    tombstones = sorted(k for k, v in both if v is None)
    assert tombstones == sorted(
        [
            b'{"follower":100,"tweet_id":11}',
            b'{"follower":101,"tweet_id":10}',
            b'{"follower":101,"tweet_id":11}',
        ]
    )


def test_differential_seeded_with_restart(broker: Any, run_example: Any) -> None:
    rng = random.Random(1213)
    bs = broker.bootstrap_servers
    tweets, follows = timeline_changes(rng, T0)
    cut_t, cut_f = len(tweets) // 2, len(follows) // 3
    publish(bs, tweets[:cut_t], follows[:cut_f])
    run_example("timeline", bs, extra_source_options=(("maxOffsetsPerTrigger", "150"),))
    first = drain(bs, "timelines")
    assert fold_compacted(first) == timeline_view(tweets[:cut_t], follows[:cut_f])
    publish(bs, tweets[cut_t:], follows[cut_f:])
    run_example("timeline", bs)
    view = fold_compacted(drain(bs, "timelines"))
    assert view == timeline_view(tweets, follows)
    assert len(view) > 30
