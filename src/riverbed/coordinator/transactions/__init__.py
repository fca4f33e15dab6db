"""riverbed.coordinator.transactions: Kafka transactions as a pure state machine.

No I/O, no asyncio, no clock reads: handlers take a request value and ``now_ms`` and
return a :class:`TxnReply` (the response, ``__transaction_state`` records to append, and
the COMMIT/ABORT :class:`MarkerRequest` values to write afterwards);
:meth:`TransactionCoordinator.markers_written` completes a transaction once its markers
are durable; :meth:`TransactionCoordinator.tick` aborts timed-out transactions and expires
idle ids; :meth:`TransactionCoordinator.replay` and :meth:`~TransactionCoordinator.recover`
rebuild state after a restart.  See :mod:`.transaction_coordinator` for the contract and
``docs/transactions.md`` for the formats and the state machine.
"""

from riverbed.coordinator.transactions.orphans import OpenTransaction, OrphanReport
from riverbed.coordinator.transactions.transaction_api import (
    MAX_PRODUCER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResult,
    DescribedTransaction,
    EndTxnRequest,
    EndTxnResponse,
    InitProducerIdRequest,
    InitProducerIdResponse,
    ListedTransaction,
    ListTransactionsRequest,
    ListTransactionsResponse,
    MarkerRequest,
    TransactionResult,
)
from riverbed.coordinator.transactions.transaction_config import (
    TRANSACTION_COORDINATOR_KEYS,
    TV_0,
    TV_1,
    TV_2,
    TransactionCoordinatorConfig,
    transaction_config_from_props,
)
from riverbed.coordinator.transactions.transaction_context import TxnReply
from riverbed.coordinator.transactions.transaction_coordinator import TransactionCoordinator
from riverbed.coordinator.transactions.transaction_errors import TransactionCoordinatorError
from riverbed.coordinator.transactions.transaction_log import TransactionRecord
from riverbed.coordinator.transactions.transaction_metadata import TransactionMetadata
from riverbed.coordinator.transactions.transaction_state import TransactionState

__all__ = [
    "MAX_PRODUCER_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "TRANSACTION_COORDINATOR_KEYS",
    "TV_0",
    "TV_1",
    "TV_2",
    "AddOffsetsToTxnRequest",
    "AddOffsetsToTxnResponse",
    "AddPartitionsToTxnRequest",
    "AddPartitionsToTxnResult",
    "DescribedTransaction",
    "EndTxnRequest",
    "EndTxnResponse",
    "InitProducerIdRequest",
    "InitProducerIdResponse",
    "ListTransactionsRequest",
    "ListTransactionsResponse",
    "ListedTransaction",
    "MarkerRequest",
    "OpenTransaction",
    "OrphanReport",
    "TransactionCoordinator",
    "TransactionCoordinatorConfig",
    "TransactionCoordinatorError",
    "TransactionMetadata",
    "TransactionRecord",
    "TransactionResult",
    "TransactionState",
    "TxnReply",
    "transaction_config_from_props",
]
