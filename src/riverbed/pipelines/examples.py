"""The shipped example pipelines run by ``riverbed pipeline run NAME`` (a contract).

Each example is a module exposing

* ``DESCRIPTION: str`` -- one line for ``riverbed pipeline list``;
* ``INPUT_TOPICS(options) -> list[str]`` and ``OUTPUT_TOPICS(options) -> dict[str, dict[str, str]]``
  (topic name -> topic configs; the runner creates missing output topics with them, e.g.
  ``{"cleanup.policy": "compact"}`` for an upsert/tombstone output);
* ``start(spark, options) -> list[StreamingQuery]`` -- starts the example's streaming
  queries on ``spark`` (each query checkpoints under ``options.checkpoint / <query name>``)
  and returns them.  With ``options.available_now`` every query uses
  ``trigger(availableNow=True)`` so it processes what is present in its inputs and stops.

The runner (``riverbed.cli.pipeline_command``) builds the local session, creates the
output topics, calls ``start`` and then waits: until all queries terminate
(``--available-now``) or until SIGTERM/SIGINT, when it stops the queries and exits 0.
A second run on the same checkpoint continues where the first stopped (Spark's own
checkpoint and offset log).

Value conventions shared by every example (see docs/joins.md, docs/time-and-patterns.md):
values are JSON objects with exactly the documented fields (a null field present as
null), event time ``ts`` is epoch milliseconds, every example tolerates up to exactly 10 minutes
of event-time disorder (``WATERMARK_DELAY``: a row exactly 10 min late is kept, one
10 min + 1 ms late is dropped).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from riverbed.errors import ConfigError

#: Every example's watermark delay: 10 minutes and 1 ms.  The contract is "up to 10
#: minutes of event-time disorder is tolerated": a row exactly 10 minutes behind the
#: largest ``ts`` of earlier micro-batches is kept, one 10 min + 1 ms behind is late.
#: Spark drops an input row whose event time is at or behind the watermark
#: (``ts <= max ts - delay``), so with exactly 10 minutes a row exactly 10 minutes late
#: would be dropped; the extra millisecond makes the 10 minutes inclusive
#: (docs/time-and-patterns.md, docs/joins.md "Late rows").  Code that classifies rows
#: as late by hand uses :data:`WATERMARK_DELAY_MS` with Spark's rule (``ts <= W``).
WATERMARK_DELAY = "10 minutes 1 millisecond"
WATERMARK_DELAY_MS = 10 * 60 * 1000 + 1
#: Aliases kept for the join examples (search-clicks, enrich): the same delay.
JOIN_WATERMARK_DELAY = WATERMARK_DELAY
JOIN_WATERMARK_DELAY_MS = WATERMARK_DELAY_MS

#: Example name -> module implementing it (imported lazily: Spark is an extra).
EXAMPLES: dict[str, str] = {
    "search-clicks": "riverbed.pipelines.search_clicks",
    "enrich": "riverbed.pipelines.enrich",
    "timeline": "riverbed.pipelines.timeline",
    "sessions": "riverbed.pipelines.sessions",
    "fraud": "riverbed.pipelines.fraud",
    "approx-pageviews": "riverbed.pipelines.approx_pageviews",
    "late-policies": "riverbed.pipelines.late_policies_example",
    "stored-queries": "riverbed.pipelines.stored_queries_example",
    "clock-skew": "riverbed.pipelines.clock_skew_example",
    "repartition-sessions": "riverbed.pipelines.repartition_sessions",
    "sliding-failures": "riverbed.pipelines.sliding_failures",
}


@dataclass(frozen=True)
class ExampleOptions:
    """What ``riverbed pipeline run`` passes to an example's ``start``.

    ``topic_prefix`` is the CDC topic prefix (``<prefix>.main.<table>``), default
    ``riverbed`` like ``riverbed cdc``.  ``extra_sink_options`` / ``extra_source_options``
    are added to every riverbed sink / source the example builds (tests use them for
    e.g. small ``maxOffsetsPerTrigger``).
    """

    bootstrap_server: str
    checkpoint: Path
    topic_prefix: str = "riverbed"
    available_now: bool = False
    extra_source_options: tuple[tuple[str, str], ...] = ()
    extra_sink_options: tuple[tuple[str, str], ...] = ()

    def query_checkpoint(self, query_name: str) -> str:
        """The checkpoint directory of one of the example's queries."""
        return str(self.checkpoint / query_name)


class UnknownExampleError(ConfigError):
    """No example of that name (the CLI turns it into a one-line error)."""


def example_module(name: str) -> ModuleType:
    """The module implementing example ``name``; raises UnknownExampleError."""
    try:
        module_name = EXAMPLES[name]
    except KeyError:
        known = ", ".join(sorted(EXAMPLES))
        raise UnknownExampleError(f"no example pipeline {name!r} (known: {known})") from None
    return importlib.import_module(module_name)
