"""Share sessions (KIP-932): which partitions a share consumer fetches, by epoch.

A share session belongs to one member of one share group, ``(group id, member id)``; it
holds the set of topic-partitions the member fetches and the epoch its next request must
carry.  ``ShareSessionEpoch`` on ShareFetch / ShareAcknowledge:

* ``0`` opens a session (ShareFetch only), replacing one the member already had; the
  request's topics are the session's partitions;
* ``-1`` closes it (after the request's acknowledgements are applied); the member's
  acquired records in those partitions are released by the caller;
* any other value must equal the session's next epoch (else INVALID_SHARE_SESSION_EPOCH;
  no session: SHARE_SESSION_NOT_FOUND); a ShareFetch then adds its topics and drops its
  forgotten topics (incremental), and the next epoch moves on (1, 2, ... wrapping to 1).

A session also closes when the connection of its latest request does (the caller releases
the member's records there), as Kafka 4 closes share sessions on disconnect.  Memory only
(a broker restart forgets every session: clients get SHARE_SESSION_NOT_FOUND and open a
new one).  Event-loop only, not thread-safe.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from riverbed.errors import RiverbedError
from riverbed.protocol.error_codes import ErrorCode
from riverbed.protocol.topic_partition import TopicPartition

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 0x7FFFFFFF


class ShareSessionError(RiverbedError):
    """A request whose session epoch does not match: answered with ``error_code``."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code


@dataclass(slots=True)
class ShareSession:
    group_id: str
    member_id: str
    connection_id: int = 0
    """The connection of its latest request: the session closes with it."""
    next_epoch: int = 1
    partitions: dict[TopicPartition, None] = field(default_factory=dict)
    """Ordered set: the order partitions were added (the fetch order)."""

    def advance(self) -> None:
        self.next_epoch = 1 if self.next_epoch >= MAX_EPOCH else self.next_epoch + 1


class ShareSessionCache:
    """Every open share session of the broker (see the module docstring)."""

    def __init__(self) -> None:
        self._sessions: dict[tuple[str, str], ShareSession] = {}

    def get(self, group_id: str, member_id: str) -> ShareSession | None:
        return self._sessions.get((group_id, member_id))

    def fetch_session(
        self,
        group_id: str,
        member_id: str,
        epoch: int,
        added: Iterable[TopicPartition],
        forgotten: Iterable[TopicPartition],
        connection_id: int = 0,
    ) -> ShareSession:
        """The session a ShareFetch uses, opened or updated; raises ShareSessionError.
        With ``epoch == FINAL_EPOCH`` the session is returned as it is; the caller
        :meth:`close`\\ s it once the acknowledgements are applied."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            session = ShareSession(group_id, member_id, connection_id)
            self._sessions[key] = session
            for tp in added:
                session.partitions[tp] = None
            return session
        session = self._check(group_id, member_id, epoch)
        session.connection_id = connection_id
        if epoch != FINAL_EPOCH:
            for tp in forgotten:
                session.partitions.pop(tp, None)
            for tp in added:
                session.partitions[tp] = None
            session.advance()
        return session

    def acknowledge_session(
        self, group_id: str, member_id: str, epoch: int, connection_id: int = 0
    ) -> ShareSession:
        """The session a ShareAcknowledge uses (epoch 0 is refused); raises
        ShareSessionError."""
        if epoch == INITIAL_EPOCH:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                "ShareAcknowledge cannot open a share session (epoch 0)",
            )
        session = self._check(group_id, member_id, epoch)
        session.connection_id = connection_id
        if epoch != FINAL_EPOCH:
            session.advance()
        return session

    def _check(self, group_id: str, member_id: str, epoch: int) -> ShareSession:
        session = self._sessions.get((group_id, member_id))
        if session is None:
            raise ShareSessionError(
                ErrorCode.SHARE_SESSION_NOT_FOUND,
                f"no share session for member {member_id} of group {group_id}",
            )
        if epoch != FINAL_EPOCH and epoch != session.next_epoch:
            raise ShareSessionError(
                ErrorCode.INVALID_SHARE_SESSION_EPOCH,
                f"share session epoch {epoch}, expected {session.next_epoch}",
            )
        return session

    def close(self, group_id: str, member_id: str) -> ShareSession | None:
        """Forget the member's session; the closed session (None if there was none)."""
        return self._sessions.pop((group_id, member_id), None)

    def close_connection(self, connection_id: int) -> list[ShareSession]:
        """Forget the sessions whose latest request came on ``connection_id`` (closed)."""
        if not connection_id:
            return []
        gone = [k for k, v in self._sessions.items() if v.connection_id == connection_id]
        return [self._sessions.pop(k) for k in gone]

    def close_group(self, group_id: str) -> None:
        for key in [k for k in self._sessions if k[0] == group_id]:
            del self._sessions[key]

    def __len__(self) -> int:
        return len(self._sessions)
