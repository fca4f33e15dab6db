"""DescribeTransactions and ListTransactions."""

from __future__ import annotations

from riverbed.coordinator.transactions import ListTransactionsRequest
from riverbed.coordinator.transactions.transaction_driver import TransactionDriver
from riverbed.protocol.error_codes import ErrorCode as E
from riverbed.protocol.topic_partition import TopicPartition as TP


def _three() -> tuple[TransactionDriver, dict[str, int]]:
    d = TransactionDriver()
    pids = {t: d.init(t, timeout_ms=50_000).producer_id for t in ("app-1", "app-2", "other")}
    d.add("app-1", pids["app-1"], 0, TP("b", 2), TP("a", 0), TP("b", 1))
    d.advance(100)
    d.add("other", pids["other"], 0, TP("a", 1))
    d.end("other", pids["other"], 0, commit=True)
    return d, pids


def test_describe() -> None:
    d, pids = _three()
    ongoing, empty, missing, blank = d.coordinator.describe_transactions(
        ["app-1", "app-2", "nope", ""]
    )
    assert ongoing.error_code is E.NONE
    assert (
        ongoing.transaction_state,
        ongoing.producer_id,
        ongoing.producer_epoch,
        ongoing.transaction_timeout_ms,
        ongoing.transaction_start_time_ms,
    ) == ("Ongoing", pids["app-1"], 0, 50_000, 1_000_000)
    assert ongoing.topics == (("a", (0,)), ("b", (1, 2)))
    assert (empty.transaction_state, empty.transaction_start_time_ms, empty.topics) == (
        "Empty",
        -1,
        (),
    )
    assert missing.error_code is E.TRANSACTIONAL_ID_NOT_FOUND
    assert blank.error_code is E.INVALID_REQUEST


def _ids(d: TransactionDriver, req: ListTransactionsRequest) -> list[str]:
    resp = d.coordinator.list_transactions(req, d.now)
    assert resp.error_code is E.NONE
    return [t.transactional_id for t in resp.transactions]


def test_list_filters() -> None:
    d, pids = _three()
    assert _ids(d, ListTransactionsRequest()) == ["app-1", "app-2", "other"]
    assert _ids(d, ListTransactionsRequest(("Ongoing", "PrepareCommit"))) == ["app-1", "other"]
    assert _ids(d, ListTransactionsRequest(producer_id_filters=(pids["app-2"],))) == ["app-2"]
    assert _ids(d, ListTransactionsRequest(transactional_id_pattern="app-.*")) == ["app-1", "app-2"]
    assert _ids(d, ListTransactionsRequest(transactional_id_pattern="app")) == []  # whole id
    d.advance(1000)
    # running longer than 1050 ms: app-1 started 1100 ms ago, other 1000 ms ago
    assert _ids(
        d, ListTransactionsRequest(("Ongoing", "PrepareCommit"), duration_filter_ms=1050)
    ) == ["app-1"]


def test_list_reports_unknown_state_filters_and_bad_patterns() -> None:
    d, _ = _three()
    resp = d.coordinator.list_transactions(ListTransactionsRequest(("ongoing", "Bogus")), d.now)
    assert resp.unknown_state_filters == ("ongoing", "Bogus") and resp.transactions == ()
    bad = d.coordinator.list_transactions(
        ListTransactionsRequest(transactional_id_pattern="(["), d.now
    )
    assert bad.error_code is E.INVALID_REQUEST


def test_describe_while_completing_lists_the_partitions_still_without_a_marker() -> None:
    d, pids = _three()
    d.coordinator.markers_written("other", pids["other"], 0, [], d.now)
    [other] = d.coordinator.describe_transactions(["other"])
    assert (other.transaction_state, other.topics) == ("PrepareCommit", (("a", (1,)),))
    d.write_markers()
    [other] = d.coordinator.describe_transactions(["other"])
    assert (other.transaction_state, other.topics) == ("CompleteCommit", ())
