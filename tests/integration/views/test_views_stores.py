"""Each store against the same CDC-like changelog, without a broker: live == expected ==
rebuilt from offset 0; a replayed batch changes nothing; deletes remove entries."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from riverbed.views import Change, View, ViewError, decode_record
from riverbed.views.analytics import AnalyticsView
from riverbed.views.cache import CacheView
from riverbed.views.search import SearchView

from .views_changelog import changelog, view_key

TOPIC = "cdc.main.users"


def _changes(records: list[tuple[bytes, bytes | None]], partition: int = 0) -> list[Change]:
    out = []
    for offset, (key, value) in enumerate(records):
        change = decode_record(TOPIC, partition, offset, key, value)
        assert change is not None
        out.append(change)
    return out


def _batches(changes: list[Change], size: int) -> list[list[Change]]:
    return [changes[i : i + size] for i in range(0, len(changes), size)]


@pytest.fixture(params=["search", "cache", "analytics", "tantivy"])
def make_view(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[str], View]:
    """Open (or reopen) the view named ``name`` in this test's store."""
    kind = request.param
    opened: list[View] = []

    def make(name: str) -> View:
        view: View
        if kind == "search":
            view = SearchView(tmp_path / f"{name}.db")
        elif kind == "tantivy":
            pytest.importorskip("tantivy")  # optional: the 'tantivy' extra
            from riverbed.views.tantivy_search import TantivySearchView

            view = TantivySearchView(tmp_path / f"{name}.tantivy")
        elif kind == "analytics":
            view = AnalyticsView(tmp_path / f"{name}.duckdb")
        else:
            url = request.getfixturevalue("redis_url")
            view = CacheView(url, prefix=f"t{uuid.uuid5(uuid.NAMESPACE_URL, str(tmp_path))}:{name}")
        opened.append(view)
        return view

    request.addfinalizer(lambda: [v.close() for v in opened])
    return make


def test_live_equals_expected_equals_rebuild(make_view: Callable[[str], View]) -> None:
    records, expected = changelog(users=40, steps=600)
    changes = _changes(records)
    live = make_view("live")
    for batch in _batches(changes, 37):
        live.apply(batch)
    assert live.snapshot() == expected
    assert live.high_water_offsets() == {(TOPIC, 0): len(records) - 1}
    rebuilt = make_view("rebuilt")  # an empty store reads from offset 0 in one go
    rebuilt.apply(changes)
    assert rebuilt.snapshot() == live.snapshot() == expected


def test_replay_after_crash_changes_nothing(make_view: Callable[[str], View]) -> None:
    """A crash after the view's commit and before the consumer's: the driver reads the
    same changes again, overlapping what was applied; the view skips them."""
    records, expected = changelog(users=30, steps=400, seed=11)
    changes = _changes(records)
    view = make_view("replayed")
    applied = 0
    for batch in _batches(changes, 50):
        applied += view.apply(batch)
        state = view.snapshot()
        assert view.apply(batch) == 0  # the same batch twice
        assert view.snapshot() == state
    assert view.apply(changes[100:250]) == 0  # an overlapping re-read
    assert view.snapshot() == expected
    assert applied > 0


def test_deletes_and_tombstones_remove_entries(make_view: Callable[[str], View]) -> None:
    key = b'{"id": 1}'
    insert = b'{"before": null, "after": {"id": 1, "name": "glacier"}, "op": "c"}'
    delete = b'{"before": {"id": 1, "name": "glacier"}, "after": null, "op": "d"}'
    other = b'{"before": null, "after": {"id": 2, "name": "delta"}, "op": "c"}'
    view = make_view("deletes")
    view.apply(_changes([(key, insert), (b'{"id": 2}', other)]))
    assert set(view.snapshot()) == {view_key(1), view_key(2)}
    if hasattr(view, "search"):
        assert view.search("glacier") == [view_key(1)]
    view.apply([decode_record(TOPIC, 0, 2, key, delete)])  # type: ignore[list-item]
    assert set(view.snapshot()) == {view_key(2)}
    if hasattr(view, "search"):
        assert view.search("glacier") == []
    if isinstance(view, CacheView):
        assert view.get(view_key(1)) is None
    if isinstance(view, AnalyticsView):
        assert view.query("SELECT count(*) FROM view_rows") == [(1,)]
    # a tombstone alone (e.g. the delete event compacted away) deletes too
    view.apply([decode_record(TOPIC, 0, 3, b'{"id": 2}', None)])  # type: ignore[list-item]
    assert view.snapshot() == {}
    assert view.high_water_offsets() == {(TOPIC, 0): 3}


def test_decode_record_formats() -> None:
    wrapped = b'{"schema": {}, "payload": {"before": null, "after": {"id": 1}, "op": "r"}}'
    key = b'{"schema": {}, "payload": {"id": 1}}'
    change = decode_record(TOPIC, 0, 5, key, wrapped)
    assert change == Change(TOPIC, 0, 5, '{"id":1}', {"id": 1})
    assert decode_record(TOPIC, 0, 6, None, b'{"op": "t"}') is None  # no key
    assert decode_record(TOPIC, 0, 7, b"k", b'{"before": null, "after": null, "op": "t"}') is None
    event = decode_record(TOPIC, 0, 8, b"order-9", b'{"total": 3}')
    assert event == Change(TOPIC, 0, 8, "order-9", {"total": 3})
    with pytest.raises(ViewError):
        decode_record(TOPIC, 0, 9, b"k", b"not json")
