"""What the share group handlers may touch (structural protocols, as :mod:`.deps`).

:class:`ShareGroupDeps` names the share group service
(:class:`~riverbed.broker.share_groups.ShareGroupService`, which satisfies
:class:`SharePort`) and the topic table (names <-> ids).  Event-loop only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

from riverbed.broker.handlers.deps import TopicNames

if TYPE_CHECKING:
    from riverbed.coordinator.share_group import (
        ShareGroupDescription,
        ShareGroupHeartbeatRequest,
        ShareGroupHeartbeatResponse,
    )
    from riverbed.protocol.error_codes import ErrorCode


class SharePort(Protocol):
    """The share group service as the membership and admin handlers use it."""

    @property
    def closed(self) -> bool: ...

    def heartbeat(self, req: ShareGroupHeartbeatRequest) -> ShareGroupHeartbeatResponse: ...

    def describe(self, group_id: str) -> ShareGroupDescription: ...

    def is_share_group(self, group_id: str) -> bool: ...

    def list_groups(
        self, states_filter: Iterable[str] = (), types_filter: Iterable[str] = ()
    ) -> list[tuple[str, str]]: ...

    def delete_group(self, group_id: str) -> ErrorCode: ...


class ShareGroupDeps(Protocol):
    @property
    def share_groups(self) -> SharePort: ...

    @property
    def topics(self) -> TopicNames: ...
