"""What a request did, read off its decoded request and response for the broker's metrics.

Three questions, each answered in time linear in the *partitions* (and record batches) of
one request, never in its records:

* :func:`response_error` -- the error code a response reports: the first non-zero
  ``error_code`` found depth-first (top level first, then per topic, per partition), or
  0.  Which fields to visit is planned once per response class from the generated
  schema (``FIELDS``), so a response with no error code (ApiVersions v0 has one, Metadata
  has them per topic and partition) costs only the walk of its nested lists.
* :func:`produce_traffic` -- bytes and records appended per topic by a Produce: the
  ``records`` of every partition whose response is ``NONE``.
* :func:`fetch_traffic` -- bytes and records returned per topic by a Fetch.

Records are counted from record-batch headers (:func:`count_records`): v2 batches carry
``recordsCount`` at byte 57; a v0/v1 message set counts as 0 records (bytes are still
counted), a truncated last batch (a Fetch cut at its size limit) is not counted.

Pure functions, no I/O, no state but the per-class plan cache (filled under the GIL by
whichever thread first sees a class; a race only computes the same plan twice).
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from riverbed.protocol.messages import FetchResponse, ProduceRequest, ProduceResponse
from riverbed.protocol.messages.base import Struct

_INT32 = struct.Struct(">i")
_BATCH_HEADER = 61  # v2 record batch header: recordsCount ends at byte 61
_LENGTH_AT = 8  # batchLength (int32): bytes after it, i.e. batch size - 12
_MAGIC_AT = 16
_COUNT_AT = 57

TopicName = Callable[[uuid.UUID], "str | None"]
"""Resolves a topic id (Produce v13+ and Fetch v13+ name topics by id) to its name."""

Traffic = dict[str, list[int]]
"""topic -> ``[bytes, records]``."""

# class -> (error_code field names, nested fields: (name, is_list))
_Plan = tuple[tuple[str, ...], tuple[tuple[str, bool], ...]]
_PLANS: dict[type, _Plan] = {}


def _plan(cls: type[Struct], namespace: type[Struct]) -> _Plan:
    plan = _PLANS.get(cls)
    if plan is not None:
        return plan
    _PLANS[cls] = ((), ())  # a recursive schema ends here
    codes: list[str] = []
    nested: list[tuple[str, bool]] = []
    for spec in cls.FIELDS:
        if spec.name == "error_code" and spec.type == "int16":
            codes.append(spec.name)
        elif spec.struct is not None and spec.type in ("struct", "[]struct"):
            child = getattr(namespace, spec.struct, None)
            if isinstance(child, type) and issubclass(child, Struct):
                child_codes, child_nested = _plan(child, namespace)
                if child_codes or child_nested:
                    nested.append((spec.name, spec.type == "[]struct"))
    plan = (tuple(codes), tuple(nested))
    _PLANS[cls] = plan
    return plan


def response_error(response: Any) -> int:
    """The first non-zero ``error_code`` in ``response`` (depth-first), else 0."""
    if not isinstance(response, Struct):
        return 0
    return _first_error(response, type(response))


def _first_error(value: Struct, namespace: type[Struct]) -> int:
    codes, nested = _plan(type(value), namespace)
    for name in codes:
        code = getattr(value, name, 0)
        if code:
            return int(code)
    for name, is_list in nested:
        child = getattr(value, name, None)
        if is_list:
            if isinstance(child, list):
                for item in child:
                    code = _first_error(item, namespace)
                    if code:
                        return code
        elif isinstance(child, Struct):
            code = _first_error(child, namespace)
            if code:
                return code
    return 0


def count_records(buf: Any) -> int:
    """Records in the complete v2 batches of ``buf`` (bytes or memoryview), by header."""
    if not buf:
        return 0
    try:
        end = len(buf)
        pos = 0
        records = 0
        while end - pos >= _BATCH_HEADER:
            size = 12 + _INT32.unpack_from(buf, pos + _LENGTH_AT)[0]
            if size < _BATCH_HEADER - 12 or pos + size > end:
                break
            if buf[pos + _MAGIC_AT] == 2:
                records += _INT32.unpack_from(buf, pos + _COUNT_AT)[0]
            pos += size
        return records
    except (TypeError, struct.error, IndexError):  # not a plain buffer: bytes only
        return 0


def _add(traffic: Traffic, topic: str, records: Any) -> None:
    if not records:
        return
    counts = traffic.get(topic)
    if counts is None:
        counts = traffic[topic] = [0, 0]
    counts[0] += len(records)
    counts[1] += count_records(records)


def _name(name: str, topic_id: Any, topic_name: TopicName) -> str | None:
    if name:
        return name
    if isinstance(topic_id, uuid.UUID):
        return topic_name(topic_id)
    return None


def produce_error(response: ProduceResponse) -> int:
    """:func:`response_error` for a Produce response, without the generic walk."""
    for topic in response.responses:
        for part in topic.partition_responses:
            if part.error_code:
                return int(part.error_code)
    return 0


def produce_traffic(
    request: ProduceRequest,
    response: ProduceResponse | None,
    topic_name: TopicName,
    error: int | None = None,
) -> Traffic:
    """Bytes and records appended per topic (partitions answered ``NONE``; acks=0
    requests have no response and count every partition sent).  ``error``: the
    response's :func:`produce_error` when the caller has it already."""
    failed: set[tuple[str | None, int]] = set()
    if error is None and response is not None:
        error = produce_error(response)
    if response is not None and error:
        for topic in response.responses:
            name = _name(topic.name, topic.topic_id, topic_name)
            for part in topic.partition_responses:
                if part.error_code:
                    failed.add((name, part.index))
    traffic: Traffic = {}
    for topic_data in request.topic_data:
        name = _name(topic_data.name, topic_data.topic_id, topic_name)
        if name is None:
            continue
        for part_data in topic_data.partition_data:
            if not failed or (name, part_data.index) not in failed:
                _add(traffic, name, part_data.records)
    return traffic


def fetch_traffic(response: FetchResponse, topic_name: TopicName) -> Traffic:
    """Bytes and records returned per topic by a Fetch response."""
    traffic: Traffic = {}
    for topic in response.responses:
        name: str | None = None
        for part in topic.partitions:
            if part.records:
                if name is None:
                    name = _name(topic.topic, topic.topic_id, topic_name)
                    if name is None:
                        break
                _add(traffic, name, part.records)
    return traffic
