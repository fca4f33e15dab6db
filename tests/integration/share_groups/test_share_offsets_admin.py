"""The share group offsets admin on Riverbed: an AlterShareGroupOffsets that answered
survives a SIGKILL of the broker (its snapshot was fsynced first), the lag is reported, a
DeleteShareGroupOffsets forgets the topic's state, durably too.  ~15 s."""

from __future__ import annotations

from share_helpers import create_topic, produce

from riverbed.queue.admin import ShareGroupAdmin
from riverbed.testing.broker_process import BrokerProcess


def _offsets(bootstrap: str, group: str, topic: str) -> dict[int, tuple[int, int]]:
    with ShareGroupAdmin(bootstrap, timeout_s=60) as admin:
        found = admin.describe_offsets(group, {topic: [0, 1]})
    return {o.partition: (o.start_offset, o.lag) for o in found}


def test_altered_and_deleted_start_offsets_survive_a_kill_9(share_broker: BrokerProcess) -> None:
    bs = share_broker.bootstrap_servers
    create_topic(bs, "reset-me", 2)
    produce(bs, "reset-me", [f"r{i}".encode() for i in range(20)], 2)
    with ShareGroupAdmin(bs, timeout_s=60) as admin:
        admin.alter_offsets("resetters", {("reset-me", 0): 3, ("reset-me", 1): 5})
    share_broker.kill()
    share_broker.start(timeout_s=180)
    offsets = _offsets(bs, "resetters", "reset-me")
    assert {p: start for p, (start, _lag) in offsets.items()} == {0: 3, 1: 5}
    assert all(lag >= 0 for _start, lag in offsets.values())

    with ShareGroupAdmin(bs, timeout_s=60) as admin:
        response = admin._coordinator("resetters").request(
            "DeleteShareGroupOffsets",
            _delete_request("resetters", "reset-me"),
        )
    assert response.error_code == 0 and [t.error_code for t in response.responses] == [0]
    assert _offsets(bs, "resetters", "reset-me") == {0: (-1, -1), 1: (-1, -1)}
    share_broker.kill()
    share_broker.start(timeout_s=180)
    # The tombstones were durable: no state of the topic is replayed.
    assert _offsets(bs, "resetters", "reset-me") == {0: (-1, -1), 1: (-1, -1)}


def _delete_request(group: str, topic: str) -> object:
    from riverbed.protocol.messages.generated.delete_share_group_offsets_request import (
        DeleteShareGroupOffsetsRequest as Req,
    )

    return Req(group_id=group, topics=[Req.DeleteShareGroupOffsetsRequestTopic(topic_name=topic)])
