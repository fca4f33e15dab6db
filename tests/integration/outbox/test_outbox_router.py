"""The outbox router on its own (no broker): which change records route, and to what."""

from __future__ import annotations

import json

import pytest

from riverbed.cdc.outbox import OutboxRouter, router_for_table, with_outbox_table
from riverbed.errors import CdcError

ROW = {
    "id": "6c1f",
    "aggregatetype": "order line",
    "aggregateid": "o-1",
    "type": "OrderCreated",
    "payload": '{"total": 3}',
}


def change(op: str, before: object = None, after: object = None, schema: bool = False) -> bytes:
    envelope = {"before": before, "after": after, "source": {}, "op": op, "ts_ms": 1}
    document = {"schema": {"type": "struct"}, "payload": envelope} if schema else envelope
    return json.dumps(document).encode()


def test_insert_and_snapshot_rows_route_deletes_updates_and_tombstones_do_not() -> None:
    router = OutboxRouter("app.public.outbox", additional_headers={"type": "eventType"})
    routed = router.route("app.public.outbox", [(b"{}", change("c", after=ROW))])
    assert routed is not None and len(routed) == 1
    event = routed[0]
    assert event.topic == "outbox.event.order_line"  # illegal topic characters -> _
    assert (event.key, event.value) == (b"o-1", b'{"total": 3}')  # payload as is
    assert event.headers == [("id", b"6c1f"), ("eventType", b"OrderCreated")]
    assert router.route("app.public.outbox", [(b"{}", change("r", after=ROW, schema=True))])
    delete = [(b"{}", change("d", before=ROW)), (b"{}", None)]
    assert router.route("app.public.outbox", delete) == []
    assert router.route("app.public.outbox", [(b"{}", change("u", ROW, ROW))]) == []
    assert router.route("app.public.orders", [(b"{}", None)]) is None  # other tables pass


def test_values_that_are_not_strings_are_json_and_missing_columns_are_one_line() -> None:
    router = router_for_table("app", "outbox", "main", topic_prefix="events")
    assert router.source_topic == "app.main.outbox"
    row = {**ROW, "aggregateid": 17, "payload": {"a": [1, 2]}, "id": None}
    (event,) = router.route("app.main.outbox", [(None, change("c", after=row))]) or []
    assert (event.topic, event.key, event.value) == ("events.order_line", b"17", b'{"a":[1,2]}')
    with pytest.raises(CdcError, match="no column 'aggregatetype'"):
        router.route("app.main.outbox", [(None, change("c", after={"id": 1}))])
    assert with_outbox_table((), "outbox") == ()
    assert with_outbox_table(("orders",), "outbox") == ("orders", "outbox")
