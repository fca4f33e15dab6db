"""One author's part of the timeline view (tweets ⋈ follows), in plain Python.

An :class:`AuthorState` holds one author's tweets and followers; :meth:`AuthorState.apply`
applies a micro-batch of changes to both and returns the view's changes: an upsert for
every (follower, tweet) pair that appeared or whose tweet changed, a tombstone for every
pair that went away (tweet deleted or moved to another author, follow removed).  Pairs
that did not change are not re-emitted; a pair never emitted gets no tombstone.

Only the state after the batch matters, so the order of changes *between* the two tables
does not; within a table changes are applied in topic order (per key, commit order).

Format on the state store: one JSON text (:meth:`to_json`): ``{"t": {tweet_id: [text,
ts]}, "f": [follower, ...]}`` with ids as JSON integers and ``text`` as its JSON text.
Pure and not thread-safe: one instance per key per call, on a Spark Python worker.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

Tweet = tuple[str, int | None]
"""(text as JSON text, ts)."""

TweetChange = tuple[int, Tweet | None]
"""(tweet_id, the tweet, or None when it is deleted or moved away)."""

FollowChange = tuple[int, bool]
"""(follower, whether the follow exists after the change)."""

Emitted = tuple[int, int, Tweet | None]
"""(follower, tweet_id, the tweet, or None for a tombstone)."""


@dataclass
class AuthorState:
    """One author's tweets and followers (module docstring)."""

    tweets: dict[int, Tweet] = field(default_factory=dict)
    followers: set[int] = field(default_factory=set)

    def apply(
        self, tweet_changes: list[TweetChange], follow_changes: list[FollowChange]
    ) -> list[Emitted]:
        """Apply changes (each list in topic order); the view's changes, ordered by
        (follower, tweet_id)."""
        old_tweets, old_followers = dict(self.tweets), set(self.followers)
        for tweet_id, tweet in tweet_changes:
            if tweet is None:
                self.tweets.pop(tweet_id, None)
            else:
                self.tweets[tweet_id] = tweet
        for follower, exists in follow_changes:
            if exists:
                self.followers.add(follower)
            else:
                self.followers.discard(follower)
        changed = {t for t in old_tweets.keys() | self.tweets.keys()}
        changed = {t for t in changed if old_tweets.get(t) != self.tweets.get(t)}
        out: dict[tuple[int, int], Tweet | None] = {}
        for follower in self.followers:
            fresh = follower not in old_followers
            for tweet_id in self.tweets.keys() if fresh else changed & self.tweets.keys():
                out[(follower, tweet_id)] = self.tweets[tweet_id]
            if not fresh:
                for tweet_id in changed - self.tweets.keys():
                    if tweet_id in old_tweets:
                        out[(follower, tweet_id)] = None
        for follower in old_followers - self.followers:
            for tweet_id in old_tweets:
                out[(follower, tweet_id)] = None
        return [(f, t, tweet) for (f, t), tweet in sorted(out.items())]

    def to_json(self) -> str:
        doc = {"t": {str(k): list(v) for k, v in self.tweets.items()}, "f": sorted(self.followers)}
        return json.dumps(doc, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | None) -> AuthorState:
        if not text:
            return cls()
        doc = json.loads(text)
        tweets: dict[int, Tweet] = {int(k): (v[0], v[1]) for k, v in doc["t"].items()}
        return cls(tweets=tweets, followers=set(doc["f"]))
