"""SIGKILL the ``riverbed broker`` process under an idempotent acks=all producer, repeatedly.

Scenario (one test, 4-10 s on the shared 2-core box), run by the crash-campaign runner
(:mod:`riverbed.testing.crash_campaign`, which documents the producer, the payloads and
the checker) with one producer, four kills and one round:

1. start ``riverbed broker`` as a subprocess on a fixed port and data dir, create a
   3-partition topic;
2. a confluent-kafka producer (``acks=all``, ``enable.idempotence=true``) sends unique
   values round-robin to the partitions without pausing; after a random number of fresh
   acknowledgements (4,000-15,000) the broker is SIGKILLed mid-stream (requests in
   flight, batches appended but not yet answered) and restarted on the same data dir and
   port; the *same* producer carries on — librdkafka reconnects and retries its in-flight
   batches with their original producer id and sequence numbers, and the broker must
   recognise those already in the log as duplicates (producer state is rebuilt from the
   log on start);
3. after the last restart the producer sends 5,000 more and flushes, and a consumer reads
   every partition from offset 0 up to its high watermark.

Checks: every acknowledged record is at the offset its delivery report named, and no value
occurs twice anywhere in the log (the application never re-sends a value, so a second copy
could only come from a librdkafka retry that idempotence failed to deduplicate); each
partition's offsets run from 0 to the high watermark without a gap; the producer never
went fatal (against a correct broker a restart never makes an idempotent producer fatal)
and no record failed.  ``RIVERBED_CRASH_SEED`` replays a run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from riverbed.testing.crash_campaign import CampaignConfig, run_campaign

KILLS = 4


@pytest.mark.slow
def test_sigkilled_broker_keeps_acknowledged_records_exactly_once(tmp_path: Path) -> None:
    seed = os.environ.get("RIVERBED_CRASH_SEED")
    config = CampaignConfig(
        mode="idempotent",
        cycles=KILLS,
        cycles_per_round=KILLS,
        producers=1,
        acks_per_cycle=(4_000, 15_000),
        final_messages=5_000,
        segment_bytes=None,
        seed=None if seed is None else int(seed),
    )
    result = run_campaign(tmp_path, config)
    [report] = result.reports
    kills = result.kills
    context = f"{result.summary()} examples={report.examples} fatal={report.fatal}"
    print(context)
    # Every kill happened with work in flight, and production went on after each restart.
    assert len(kills) == KILLS and all(k.outstanding > 0 for k in kills), context
    assert report.acked + report.failed == report.sent, context
    assert report.acked > kills[-1].acked, f"no progress after the last restart; {context}"
    # No gaps: offsets 0 .. high watermark - 1 all present in every partition.
    assert report.gaps == 0, context
    # Every acknowledged record is where its delivery report said it is.
    assert report.lost == 0 and report.moved == 0, context
    # Exactly once: no value twice anywhere (the application never re-sends a value).
    assert report.duplicated == 0, context
    # Against a correct broker a restart never makes the idempotent producer fatal.
    assert report.resets == 0 and report.failed == 0, context
