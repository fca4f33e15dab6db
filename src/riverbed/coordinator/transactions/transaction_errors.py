"""The transaction coordinator's one exception: a refusal that carries its Kafka error code.

Like :class:`riverbed.coordinator.errors.GroupCoordinatorError`: handlers raise
:class:`TransactionCoordinatorError` deep inside and catch it at the handler boundary,
where it becomes the response's ``error_code``; it never escapes the public
:class:`~riverbed.coordinator.transactions.TransactionCoordinator` API.  The codes are
Kafka's (``TransactionCoordinator.scala``): PRODUCER_FENCED, INVALID_PRODUCER_ID_MAPPING,
INVALID_TXN_STATE, CONCURRENT_TRANSACTIONS, INVALID_TRANSACTION_TIMEOUT, INVALID_REQUEST,
TRANSACTIONAL_ID_NOT_FOUND.  It derives from :class:`riverbed.errors.RiverbedError`, so
:func:`riverbed.errors.error_code_for` maps it like any other Riverbed error.
"""

from __future__ import annotations

from riverbed.errors import RiverbedError
from riverbed.protocol.error_codes import ErrorCode


class TransactionCoordinatorError(RiverbedError):
    """A request the transaction coordinator refuses, with the wire code to answer."""

    def __init__(self, error_code: ErrorCode, message: str = "") -> None:
        super().__init__(message or error_code.name)
        self.error_code = error_code
        self.retriable = error_code in (
            ErrorCode.CONCURRENT_TRANSACTIONS,
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.NOT_COORDINATOR,
        )
