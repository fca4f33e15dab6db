"""Crash campaign, CI form: 20 SIGKILL cycles under load, 10 per producer mode.

The runner and the checker are :mod:`riverbed.testing.crash_campaign` (its docstring
states what each mode guarantees after a kill); the full form is
``python -m riverbed.testing.crash_campaign --cycles 1000`` (docs/reliability.md).  Each
mode: two producers, two rounds of five kills (a fresh topic per round, 1 MiB segments so
kills land around rolls), 1,000-4,000 fresh acknowledgements between kills.  About 8-20 s
per mode on the shared 2-core box, most of it the eleven broker starts.
``RIVERBED_CRASH_SEED`` replays a run; ``RIVERBED_CRASH_CYCLES`` changes the number of
cycles per mode.

The checker itself is tested first on made-up logs: a campaign whose checker cannot see a
lost, moved or duplicated record would pass against any broker.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from riverbed.testing.crash_campaign import (
    MODES,
    CampaignConfig,
    ProduceLedger,
    check,
    payload,
    run_campaign,
)


def _ledger(acked: dict[bytes, tuple[int, int]], sent: int) -> ProduceLedger:
    ledger = ProduceLedger(acked=dict(acked), sent=sent)
    ledger.sent_by["P.0"] = sent
    return ledger


def test_checker_sees_lost_moved_duplicated_and_gaps() -> None:
    a, b, c, d = (payload("P.0", i) for i in range(4))
    ledger = _ledger({a: (0, 0), b: (0, 1), c: (1, 0)}, sent=4)
    # a in place; b moved to offset 2 and duplicated at 3 (offset 1 is a gap);
    # c lost; d (never acknowledged) present; one record nobody sent.
    found = {0: {0: a, 2: b, 3: b}, 1: {0: payload("Q.0", 9)}, 2: {0: d}}
    report = check("idempotent", found, [ledger])
    assert (report.lost, report.moved, report.duplicated, report.gaps) == (1, 1, 1, 1)
    assert (report.unacked_present, report.foreign) == (1, 1)
    assert report.violations() == ["lost=1", "moved=1", "gaps=1", "foreign=1", "duplicated=1"]


def test_checker_allows_acks1_duplicates_only() -> None:
    a, b = payload("P.0", 0), payload("P.0", 1)
    ledger = _ledger({a: (0, 1), b: (0, 2)}, sent=2)
    found = {0: {0: a, 1: a, 2: b}}  # a retried after a lost response: two copies
    assert check("acks1", found, [ledger]).violations() == []
    assert check("idempotent", found, [ledger]).violations() == ["duplicated=1"]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_crash_campaign_ci_form(tmp_path: Path, mode: str) -> None:
    seed = os.environ.get("RIVERBED_CRASH_SEED")
    config = CampaignConfig(
        mode=mode,
        cycles=int(os.environ.get("RIVERBED_CRASH_CYCLES", "10")),
        cycles_per_round=5,
        producers=2,
        acks_per_cycle=(1_000, 4_000),
        final_messages=1_000,
        seed=None if seed is None else int(seed),
    )
    result = run_campaign(tmp_path, config)
    summary = result.summary()
    print(summary)
    assert len(result.kills) == config.cycles, summary
    # Every kill landed with records in flight, and each round made progress after it.
    assert all(k.outstanding > 0 for k in result.kills), summary
    assert all(r.acked + r.failed <= r.sent for r in result.reports), summary
    assert not result.violations(), f"{summary}\n{[r.examples for r in result.reports]}"
