"""Interactive queries on a join example's state: what its query keeps, read from the
checkpoint with Spark's state data source (``spark.read.format("statestore")``).

The reader sees the state as of the **last committed micro-batch** -- one micro-batch
behind a running query (about a second with the runner's trigger), exactly the state
after the last batch of a stopped one.  It only reads the checkpoint's files, so it may
run in another process while the query runs (``riverbed pipeline state NAME --checkpoint
DIR``).

One JSON-ready dict per key:

* ``enrich`` -- ``{"key": user id, "versions": [{"valid_from_ms", "partition", "offset",
  "row": {"name", "country"} | null}], "pending": [activities held for the watermark]}``
  (the table side of the enrichment, one row's versions per user);
* ``timeline`` -- ``{"key": author, "tweets": {tweet_id: {"text", "ts"}}, "followers":
  [...]}``;
* ``search-clicks`` -- ``{"key": search_id, "side": "searches" | "clicks", "rows": [...]}``:
  the searches whose window is still open and the clicks that may still match.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from riverbed.errors import ConfigError
from riverbed.pipelines.examples import example_module
from riverbed.pipelines.temporal_table import TemporalKeyState
from riverbed.pipelines.timeline_view import AuthorState

SUPPORTED = ("enrich", "timeline", "search-clicks")


class NoStateError(ConfigError):
    """The checkpoint holds no committed state for that example (not run yet, or
    another example's checkpoint)."""


def _load(spark: SparkSession, path: Path, **options: str) -> list[Any]:
    if not (path / "commits").is_dir():
        raise NoStateError(f"no committed micro-batch under {path}: run the example first")
    reader = spark.read.format("statestore")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(str(path)).collect()


def _plain(value: Any) -> Any:
    """A state column as JSON-ready: timestamps as ISO text."""
    return value.isoformat() if hasattr(value, "isoformat") else value


def _json(text: str | None) -> Any:
    return None if text is None else json.loads(text)


def read_state(
    spark: SparkSession, name: str, checkpoint: Path, key: str | None = None
) -> list[dict[str, Any]]:
    """The state of example ``name`` under ``checkpoint`` (``--checkpoint`` of the run),
    every key or only ``key`` (as text), sorted by key."""
    if name not in SUPPORTED:
        raise ConfigError(f"example {name!r} has no state reader (only {', '.join(SUPPORTED)})")
    module = example_module(name)
    path = Path(checkpoint) / str(module.QUERY_NAME)
    out: list[dict[str, Any]] = []
    if name == "search-clicks":
        for side, label in (("left", "searches"), ("right", "clicks")):
            groups: dict[str, list[dict[str, Any]]] = {}
            for row in _load(spark, path, joinSide=side):
                value = {k: _plain(v) for k, v in row["value"].asDict().items()}
                groups.setdefault(str(row["key"][0]), []).append(value)
            out += [{"key": k, "side": label, "rows": rows} for k, rows in groups.items()]
    else:
        for row in _load(spark, path):
            text = row["value"]["groupState"]["state"]
            entry: dict[str, Any] = {"key": str(row["key"][0])}
            if name == "enrich":
                table = TemporalKeyState.from_json(text)
                entry["versions"] = [
                    {
                        "valid_from_ms": v[0],
                        "partition": v[1],
                        "offset": v[2],
                        "row": None if v[3] is None else {c: _json(t) for c, t in v[3].items()},
                    }
                    for v in table.versions
                ]
                entry["pending"] = [
                    {**e, "user_id": _json(e["user_id"]), "action": _json(e["action"])}
                    for e in table.pending
                ]
            else:
                author = AuthorState.from_json(text)
                entry["tweets"] = {
                    str(t): {"text": _json(text_ts[0]), "ts": text_ts[1]}
                    for t, text_ts in sorted(author.tweets.items())
                }
                entry["followers"] = sorted(author.followers)
            out.append(entry)
    if key is not None:
        out = [e for e in out if e["key"] == key]
    return sorted(out, key=lambda e: (e["key"], e.get("side", "")))
