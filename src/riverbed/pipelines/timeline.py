"""``timeline``: the Twitter timeline as a materialized view of two changing tables,
tweets ⋈ follows, kept up to date from their CDC topics (a table-table join).

In:  ``<prefix>.main.tweets`` (``id, user_id, text, ts``) and ``<prefix>.main.follows``
     (``follower, followee``), Debezium envelopes (docs/cdc.md), read from offset 0 on a
     fresh checkpoint.
Out: ``timelines`` (compacted), key ``{"follower": F, "tweet_id": T}``, value
     ``{"follower", "tweet_id", "author", "text", "ts"}`` for every tweet whose author the
     follower follows; a tombstone (null value) when the tweet is deleted or the follow
     removed.  Ids are JSON integers; ``text`` keeps its JSON type.

How (one Spark query, checkpoint ``<checkpoint>/timeline``): both changelogs become rows
keyed by the author (``tweets.user_id`` = ``follows.followee``) and
``applyInPandasWithState`` keeps per author an
:class:`~riverbed.pipelines.timeline_view.AuthorState` (tweets and followers) in the
RocksDB state store; each micro-batch emits only the pairs that changed.  No event time:
the view follows the changelogs as they are read, and the compacted output's latest
record per key is the view after the last batch.

A tweet's delete is routed to its author by its ``before`` image, so deletes need the
old row's ``user_id`` (``riverbed cdc sqlite`` always sends it; PostgreSQL needs
``REPLICA IDENTITY FULL``).  An update that changes a tweet's author is a removal from
the old author and an insert at the new one, written by two Spark tasks: a follower of
both authors may see the two records for that key in either order within that batch.
Output goes through the exactly-once sink (:mod:`riverbed.pipelines.example_io`): a run
killed mid-batch and restarted on its checkpoint writes each record once, so a key's
consecutive records always differ (with ``--sink-option deliveryGuarantee=at_least_once``
a replay re-sends the same upserts and tombstones, harmless for a compacted view).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd  # type: ignore[import-untyped]
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.state import GroupState, GroupStateTimeout

from riverbed.pipelines.changelog import changes_of, row_image, row_text
from riverbed.pipelines.example_io import read_topics, write_topic
from riverbed.pipelines.examples import ExampleOptions
from riverbed.pipelines.timeline_view import AuthorState, FollowChange, TweetChange

DESCRIPTION = "timelines: tweets joined with follows from CDC, upserts and tombstones"
OUTPUT = "timelines"
QUERY_NAME = "timeline"
OUTPUT_SCHEMA = "key string, value string"
STATE_SCHEMA = "state string"


def INPUT_TOPICS(options: ExampleOptions) -> list[str]:
    return [tweets_topic(options), follows_topic(options)]


def OUTPUT_TOPICS(options: ExampleOptions) -> dict[str, dict[str, str]]:
    return {OUTPUT: {"cleanup.policy": "compact"}}


def tweets_topic(options: ExampleOptions) -> str:
    return f"{options.topic_prefix}.main.tweets"


def follows_topic(options: ExampleOptions) -> str:
    return f"{options.topic_prefix}.main.follows"


def _long(image: Column, column: str) -> Column:
    return F.try_variant_get(image, f"$.{column}", "long")


def _rows(
    changes: DataFrame, key: Column, kind: str, image: Column, exists: bool | Column
) -> DataFrame:
    present = exists if isinstance(exists, Column) else F.lit(exists)
    return changes.select(
        key.alias("key"),
        F.lit(kind).alias("kind"),
        _long(image, "id").alias("tweet_id"),
        row_image(image, "text").alias("text"),
        _long(image, "ts").alias("ts"),
        _long(image, "follower").alias("follower"),
        present.alias("present"),
        "partition",
        "offset",
    ).where(F.col("key").isNotNull())


def tweet_rows(records: DataFrame) -> DataFrame:
    """tweets CDC -> rows keyed by author: an upsert per insert/update/read, a removal per
    delete and per update that moved the tweet away from its author."""
    changes = changes_of(records)
    before, after = F.col("before"), F.col("after")
    old_author, new_author = row_text(before, "user_id"), row_text(after, "user_id")
    upserts = _rows(changes.where(F.col("op") != "d"), new_author, "t", after, True)
    moved = (F.col("op") == "u") & old_author.isNotNull() & (old_author != new_author)
    removals = _rows(changes.where((F.col("op") == "d") | moved), old_author, "t", before, False)
    return upserts.unionByName(removals)


def follow_rows(records: DataFrame) -> DataFrame:
    """follows CDC -> rows keyed by the followee: an insert per insert/update/read, a
    removal per delete and per update that changed the pair (a table whose key is not
    the pair, e.g. a surrogate ``id``)."""
    changes = changes_of(records)
    before, after = F.col("before"), F.col("after")
    inserts = _rows(
        changes.where(F.col("op") != "d"), row_text(after, "followee"), "f", after, True
    )
    old_pair = F.concat_ws("/", row_text(before, "follower"), row_text(before, "followee"))
    new_pair = F.concat_ws("/", row_text(after, "follower"), row_text(after, "followee"))
    changed = (
        (F.col("op") == "u") & row_text(before, "followee").isNotNull() & (old_pair != new_pair)
    )
    removals = _rows(
        changes.where((F.col("op") == "d") | changed),
        row_text(before, "followee"),
        "f",
        before,
        False,
    )
    return inserts.unionByName(removals)


def _author_json(author: str) -> str:
    try:
        return str(int(author))
    except ValueError:
        return json.dumps(author)


def view_records(
    author: str, emitted: list[tuple[int, int, tuple[str, int | None] | None]]
) -> pd.DataFrame:
    """The output records (``key``, ``value`` JSON texts; value None = tombstone)."""
    author_json = _author_json(author)
    keys: list[str] = []
    values: list[str | None] = []
    for follower, tweet_id, tweet in emitted:
        keys.append(f'{{"follower":{follower},"tweet_id":{tweet_id}}}')
        if tweet is None:
            values.append(None)
            continue
        text, ts = tweet
        values.append(
            f'{{"follower":{follower},"tweet_id":{tweet_id},"author":{author_json},'
            f'"text":{text or "null"},"ts":{"null" if ts is None else ts}}}'
        )
    return pd.DataFrame({"key": keys, "value": values}, columns=["key", "value"])


def _optional_long(value: object) -> int | None:
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[call-overload]


def maintain_timelines(
    key: tuple[str], frames: Iterator[pd.DataFrame], state: GroupState
) -> Iterator[pd.DataFrame]:
    """The ``applyInPandasWithState`` function: one author's changes of one batch."""
    author = AuthorState.from_json(state.get[0] if state.exists else None)
    rows = pd.concat(list(frames), ignore_index=True)
    rows = rows.sort_values(["partition", "offset", "present"], kind="stable")
    tweets: list[TweetChange] = []
    follows: list[FollowChange] = []
    for row in rows.itertuples(index=False):
        if row.kind == "t" and _optional_long(row.tweet_id) is not None:
            tweet = (row.text, _optional_long(row.ts)) if row.present else None
            tweets.append((int(row.tweet_id), tweet))
        elif row.kind == "f" and _optional_long(row.follower) is not None:
            follows.append((int(row.follower), bool(row.present)))
    emitted = author.apply(tweets, follows)
    state.update((author.to_json(),))
    yield view_records(key[0], emitted)


def timelines(tweets: DataFrame, follows: DataFrame) -> DataFrame:
    """The view's changes as ``key``, ``value`` rows (see the module docstring)."""
    union = tweet_rows(tweets).unionByName(follow_rows(follows))
    return union.groupBy("key").applyInPandasWithState(
        maintain_timelines, OUTPUT_SCHEMA, STATE_SCHEMA, "append", GroupStateTimeout.NoTimeout
    )


def start(spark: SparkSession, options: ExampleOptions) -> list[StreamingQuery]:
    """Start the one query (checkpoint ``<checkpoint>/timeline``)."""
    tweets = read_topics(spark, options, [tweets_topic(options)])
    follows = read_topics(spark, options, [follows_topic(options)])
    return [write_topic(timelines(tweets, follows), options, OUTPUT, QUERY_NAME)]
