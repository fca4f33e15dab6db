"""Group API adapters without a socket: FindCoordinator single and batched (v4+, KIP-699),
unserved key types (share; transactions are tested in
tests/unit/broker/handlers/test_handler_transactions.py), and the client host members are
reported at."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from riverbed.broker.context import RequestContext
from riverbed.broker.handlers import find_coordinator
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.framing import RequestHeader
from riverbed.protocol.messages import FindCoordinatorRequest

BROKER = SimpleNamespace(node_id=7, host="127.0.0.1", port=9999, groups=SimpleNamespace(ready=True))


def _find(version: int, **fields: object) -> object:
    header = RequestHeader(find_coordinator.API_KEY, version, 1, "t")
    return find_coordinator.handle(
        BROKER,
        RequestContext(header),  # type: ignore[arg-type]
        FindCoordinatorRequest(**fields),
    )


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_single_key_versions_answer_this_node(version: int) -> None:
    answer = _find(version, key="g", key_type=0)
    assert (answer.error_code, answer.node_id, answer.port) == (  # type: ignore[attr-defined]
        ErrorCode.NONE,
        7,
        9999,
    )


@pytest.mark.parametrize("version", [4, 5, 6])
def test_batched_keys_are_answered_one_by_one(version: int) -> None:
    answer = _find(version, key_type=0, coordinator_keys=["a", "b", "c"])
    rows = answer.coordinators  # type: ignore[attr-defined]
    assert [(r.key, r.node_id, r.port, r.error_code) for r in rows] == [
        (k, 7, 9999, ErrorCode.NONE) for k in ("a", "b", "c")
    ]


def test_share_coordinator_is_not_served() -> None:
    rows = _find(4, key_type=2, coordinator_keys=["g:t:0"]).coordinators  # type: ignore[attr-defined]
    assert rows[0].error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE and rows[0].node_id == -1


def test_client_host_comes_from_the_connection_context() -> None:
    header = RequestHeader(find_coordinator.API_KEY, 0, 1, "t")
    assert RequestContext(header).client_host == "/127.0.0.1"
    assert RequestContext(header, "10.1.2.3").client_host == "/10.1.2.3"
