"""Riverbed's exception tree, and the one place that maps it to Kafka wire error codes.

Every error Riverbed raises on purpose derives from :class:`RiverbedError`::

    RiverbedError
    ├── ConfigError                      bad setting name or value (user mistake)
    ├── ProtocolError                    anything wrong with bytes on the wire
    │   ├── DecodeError                  truncated/oversized/malformed frame or field
    │   ├── UnsupportedVersionError      API key or version we do not speak
    │   ├── UnsupportedCompressionError  unknown or unavailable codec id
    │   └── InvalidRequiredAcksError     Produce acks other than 0, 1, -1
    ├── RecordBatchError                 a record batch that must be refused
    │   ├── CorruptRecordError           CRC mismatch, bad lengths (CORRUPT_MESSAGE)
    │   ├── InvalidRecordError           well-formed but not acceptable (INVALID_RECORD)
    │   ├── InvalidTimestampError        CreateTime outside message.timestamp.{before,after}.max.ms
    │   └── LegacyMessageFormatError     magic 0/1 message sets (UNSUPPORTED_FOR_MESSAGE_FORMAT)
    ├── StorageError                     the durable log
    │   ├── OffsetOutOfRangeError        read below log start / above log end
    │   ├── MessageTooLargeError         batch over max.message.bytes
    │   ├── CorruptSegmentError          damaged acknowledged data (never truncated, never served)
    │   ├── DataDirInUseError            another process holds the data dir's lock
    │   ├── DataDirError                 the data dir cannot be created, read or written
    │   ├── BrokerStopError              a stop that could not persist everything (disk full)
    │   └── LogClosedError               operation on a closed log
    │       └── LogDeletedError          ...on a deleted one (also an UnknownTopicOrPartitionError)
    ├── ProducerStateError               idempotent producer checks
    │   ├── OutOfOrderSequenceError
    │   ├── DuplicateSequenceError
    │   ├── InvalidProducerEpochError
    │   ├── UnknownProducerIdError
    │   ├── InvalidTxnStateError         non-transactional write inside an open transaction
    │   └── TransactionCoordinatorFencedError  marker from an older coordinator epoch
    ├── TopicError
    │   ├── UnknownTopicOrPartitionError
    │   ├── TopicAlreadyExistsError
    │   ├── InvalidTopicError
    │   ├── UnknownTopicIdError
    │   ├── InvalidPartitionsError
    │   ├── InvalidReplicationFactorError
    │   ├── InvalidReplicaAssignmentError  a replica list other than this node alone
    │   ├── TopicPolicyViolationError    refused by a broker rule (internal topic, partition cap)
    │   └── TopicDeletionDisabledError   delete.topic.enable=false
    ├── CdcError                         change data capture: bad source, key, or delivery
    └── EventSourcingError               riverbed.eventsourcing: a writer cannot go on
        ├── CommandRejected              a command refused by the aggregate (one line)
        └── WriterFencedError            a newer writer took over this writer's id

Each class carries the Kafka :class:`~riverbed.protocol.error_codes.ErrorCode` it maps
to and whether a client may retry.  :func:`error_code_for` is the single mapping from
any exception to a wire code; the broker calls nothing else.
"""

from __future__ import annotations

from riverbed.protocol.error_codes import ErrorCode


class RiverbedError(Exception):
    """Root of every error Riverbed raises on purpose."""

    error_code: ErrorCode = ErrorCode.UNKNOWN_SERVER_ERROR
    retriable: bool = False


class ConfigError(RiverbedError):
    error_code = ErrorCode.INVALID_CONFIG


class ProtocolError(RiverbedError):
    error_code = ErrorCode.INVALID_REQUEST


class DecodeError(ProtocolError):
    """Bytes that do not decode: truncated, negative or oversized lengths, bad varints."""

    error_code = ErrorCode.INVALID_REQUEST


class UnsupportedVersionError(ProtocolError):
    error_code = ErrorCode.UNSUPPORTED_VERSION


class UnsupportedCompressionError(ProtocolError):
    error_code = ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


class InvalidRequiredAcksError(ProtocolError):
    error_code = ErrorCode.INVALID_REQUIRED_ACKS


class RecordBatchError(RiverbedError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class CorruptRecordError(RecordBatchError):
    error_code = ErrorCode.CORRUPT_MESSAGE


class InvalidRecordError(RecordBatchError):
    """``record_errors``: ``(batch_index, message)`` of each record at fault, which Produce
    answers in its ``record_errors`` (Kafka's ``RecordValidationException``); empty when the
    request or batch as a whole is at fault."""

    error_code = ErrorCode.INVALID_RECORD

    def __init__(self, message: str = "", record_errors: tuple[tuple[int, str], ...] = ()):
        super().__init__(message)
        self.record_errors = record_errors


class InvalidTimestampError(RecordBatchError):
    error_code = ErrorCode.INVALID_TIMESTAMP


class LegacyMessageFormatError(RecordBatchError):
    error_code = ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT


class StorageError(RiverbedError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class OffsetOutOfRangeError(StorageError):
    error_code = ErrorCode.OFFSET_OUT_OF_RANGE


class MessageTooLargeError(StorageError):
    error_code = ErrorCode.MESSAGE_TOO_LARGE


class CorruptSegmentError(StorageError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class DataDirInUseError(StorageError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class DataDirError(StorageError):
    """An OSError on the data dir, told in one line (see :func:`describe_os_error`)."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


class BrokerStopError(StorageError):
    """The broker stopped, but some partitions could not be closed cleanly (a full or
    failing disk): they are recovered at the next start.  The CLI exits with code 3."""

    error_code = ErrorCode.KAFKA_STORAGE_ERROR


def describe_os_error(exc: OSError, doing: str = "using") -> str:
    """One line naming what failed, where, and the errno: ``"no space left on device
    (ENOSPC) writing /data/t-0"``; for messages users and clients read."""
    import errno as errno_names
    import os

    code = exc.errno
    name = errno_names.errorcode.get(code, "") if code is not None else ""
    reason = (exc.strerror or os.strerror(code) if code is not None else str(exc)) or str(exc)
    reason = reason[:1].lower() + reason[1:]
    where = f" {doing} {exc.filename}" if exc.filename is not None else ""
    return f"{reason}{f' ({name})' if name else ''}{where}"


class LogClosedError(StorageError):
    error_code = ErrorCode.KAFKA_STORAGE_ERROR
    retriable = True


class ProducerStateError(RiverbedError):
    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class OutOfOrderSequenceError(ProducerStateError):
    error_code = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER


class DuplicateSequenceError(ProducerStateError):
    error_code = ErrorCode.DUPLICATE_SEQUENCE_NUMBER


class InvalidProducerEpochError(ProducerStateError):
    error_code = ErrorCode.INVALID_PRODUCER_EPOCH


class UnknownProducerIdError(ProducerStateError):
    error_code = ErrorCode.UNKNOWN_PRODUCER_ID


class InvalidTxnStateError(ProducerStateError):
    error_code = ErrorCode.INVALID_TXN_STATE


class TransactionCoordinatorFencedError(ProducerStateError):
    error_code = ErrorCode.TRANSACTION_COORDINATOR_FENCED


class TopicError(RiverbedError):
    error_code = ErrorCode.UNKNOWN_SERVER_ERROR


class UnknownTopicOrPartitionError(TopicError):
    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True


class LogDeletedError(LogClosedError, UnknownTopicOrPartitionError):
    """A partition log used after its topic's deletion began (a request that found the
    log just before): UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers for a partition it no
    longer hosts, never KAFKA_STORAGE_ERROR (nothing failed; the log is not offline)."""

    error_code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    retriable = True


class UnknownTopicIdError(TopicError):
    error_code = ErrorCode.UNKNOWN_TOPIC_ID
    retriable = True


class TopicAlreadyExistsError(TopicError):
    error_code = ErrorCode.TOPIC_ALREADY_EXISTS


class InvalidTopicError(TopicError):
    error_code = ErrorCode.INVALID_TOPIC_EXCEPTION


class InvalidPartitionsError(TopicError):
    error_code = ErrorCode.INVALID_PARTITIONS


class InvalidReplicationFactorError(TopicError):
    error_code = ErrorCode.INVALID_REPLICATION_FACTOR


class InvalidReplicaAssignmentError(TopicError):
    error_code = ErrorCode.INVALID_REPLICA_ASSIGNMENT


class TopicPolicyViolationError(TopicError):
    error_code = ErrorCode.POLICY_VIOLATION


class TopicDeletionDisabledError(TopicError):
    error_code = ErrorCode.TOPIC_DELETION_DISABLED


class CdcError(RiverbedError):
    """Change data capture cannot go on: the source database is missing or unusable, a
    captured table has no key, or the broker refused or lost a change (message for the user)."""


class EventSourcingError(RiverbedError):
    """:mod:`riverbed.eventsourcing`: a writer or client cannot go on (message for the user)."""


class CommandRejected(EventSourcingError):
    """A command refused against the aggregate's current state or version (one line)."""


class WriterFencedError(EventSourcingError):
    """A newer writer with the same transactional id fenced this one (a zombie)."""


def error_code_for(exc: BaseException) -> ErrorCode:
    """The Kafka wire error code for ``exc``: the one mapping the broker uses.

    Riverbed errors carry their own code; anything else is a bug on our side and maps
    to ``UNKNOWN_SERVER_ERROR`` (the broker logs it with its traceback).
    """
    if isinstance(exc, RiverbedError):
        return exc.error_code
    return ErrorCode.UNKNOWN_SERVER_ERROR
