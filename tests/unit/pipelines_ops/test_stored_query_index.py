"""QueryIndex / StoredQuery (riverbed.pipelines.stored_queries) without Spark."""

from __future__ import annotations

import json
import random

import pytest

from riverbed.errors import ConfigError
from riverbed.pipelines.stored_queries import QueryIndex, StoredQuery

DISK = json.dumps({"terms": ["Disk full"]})
ERRORS = json.dumps({"conditions": [{"field": "level", "op": "=", "value": "error"}]})
BIG = json.dumps(
    {"terms": ["order"], "conditions": [{"field": "amount", "op": ">=", "value": 100}]}
)


def test_known_answers() -> None:
    index = QueryIndex({"disk": DISK, "errors": ERRORS})
    assert index.match({"text": "DISK is full!", "level": "warn"}) == ["disk"]
    assert index.match({"text": "disk ok", "level": "error"}) == ["errors"]
    assert index.match({"text": "full disk", "level": "error"}) == ["disk", "errors"]
    index.apply("big", BIG)
    index.apply("disk", None)  # tombstone
    assert index.match({"text": "full disk, order 7", "amount": 120}) == ["big"]
    assert index.match({"text": "order", "amount": "lots"}) == []  # str vs int: no match
    index.apply("errors", "{not json")  # undecodable: deletes
    assert index.state() == {"big": BIG}
    assert QueryIndex(index.state()).match({"text": "order", "amount": 100}) == ["big"]


def test_ops() -> None:
    q = StoredQuery.parse(
        "q",
        json.dumps(
            {
                "text_field": "body",
                "conditions": [
                    {"field": "a", "op": "in", "value": [1, 2]},
                    {"field": "b", "op": "!=", "value": 3},
                    {"field": "c", "op": "<", "value": 5},
                ],
            }
        ),
    )
    assert q.matches({"a": 2, "c": 4})  # b missing: != holds
    assert not q.matches({"a": 3, "c": 4})
    assert not q.matches({"a": 1, "b": 3, "c": 4})
    with pytest.raises(ConfigError):
        StoredQuery.parse("q", json.dumps({"conditions": [{"field": "a", "op": "~", "value": 1}]}))
    with pytest.raises(ConfigError):
        StoredQuery.parse("q", "[1]")


@pytest.mark.parametrize("seed", range(5))
def test_index_equals_scanning_every_query(seed: int) -> None:
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(12)]
    index = QueryIndex()
    live: dict[str, StoredQuery] = {}
    for n in range(300):
        qid = f"q{rng.randint(0, 15)}"
        if rng.random() < 0.2:
            index.apply(qid, None)
            live.pop(qid, None)
            continue
        text = json.dumps(
            {
                "terms": rng.sample(vocab, rng.randint(0, 2)),
                "conditions": [{"field": "n", "op": "<", "value": rng.randint(0, 10)}]
                if rng.random() < 0.5
                else [],
            }
        )
        index.apply(qid, text)
        live[qid] = StoredQuery.parse(qid, text)
        event = {"text": " ".join(rng.sample(vocab, 4)), "n": n % 10}
        assert index.match(event) == sorted(q for q, sq in live.items() if sq.matches(event))
