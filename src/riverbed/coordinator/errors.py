"""The group coordinator's one exception: a refusal that carries its Kafka error code.

Handlers validate a request by raising :class:`GroupCoordinatorError` deep inside and
catching it at the handler boundary, where it becomes the response's ``error_code``.
It never escapes the public :class:`~riverbed.coordinator.GroupCoordinator` API: every
handler answers with a response value, errors included.  The code lives on the instance
(``UNKNOWN_MEMBER_ID``, ``ILLEGAL_GENERATION``, ``FENCED_INSTANCE_ID``, ...) because the
coordinator refuses requests with some twenty distinct codes and a class per code would
add nothing.  It derives from :class:`riverbed.errors.RiverbedError`, so
:func:`riverbed.errors.error_code_for` maps it like any other Riverbed error.
"""

from __future__ import annotations

from riverbed.errors import RiverbedError
from riverbed.protocol.error_codes import ErrorCode


class GroupCoordinatorError(RiverbedError):
    """A request the group coordinator refuses, with the wire code to answer."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code


class IllegalStateTransitionError(RuntimeError):
    """A state change the state enum forbids: a coordinator bug, never a client error."""
