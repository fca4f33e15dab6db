"""Protocol fuzzing: malformed Kafka requests of every served API against a broker process.

A *case* is one request frame for one ``(api key, version)`` the broker advertises in
ApiVersions: a message of the generated codec (:mod:`riverbed.protocol.messages`) built
field by field from the schema metadata (:func:`riverbed.protocol.messages.samples.build`)
with fuzzing-friendly values (:class:`FuzzDraw`: names from a small pool so requests hit
real topics and groups, integers biased to edge values and small numbers, Produce
``records`` often a real record batch), encoded, then mutated (:data:`MUTATIONS`): bit
flips, edge integers written over random positions, truncated, inserted, deleted or
appended bytes, a random header api key/version — all with a corrected size prefix, so the
frame is well framed — or broken framing: a size prefix that is negative or over
``socket.request.max.bytes``, a frame cut short, raw random bytes.

Every random choice goes through a :class:`Source`: :class:`RandomSource` (``random``,
one seeded generator per case, so ``--seed S --case I`` replays case ``I`` alone) for the
long runs, or a Hypothesis ``data`` object (:class:`HypothesisSource`) for the property
test, which then shrinks a failing case.

:class:`FuzzClient` sends a case over TCP and classifies what happened:

* a well-framed case is followed on the same connection by a *sentinel* ApiVersions v0
  request; responses come back in request order, so the sentinel's answer means the
  case was handled (``answered``: a response came for it; ``silent``: none, e.g. Produce
  with acks=0); end of stream before it means ``closed`` (the broker dropped the
  connection, as it must for a request it cannot decode);
* a badly framed case is followed by a half-close (``SHUT_WR``) and must end in
  ``closed``;
* no answer and no close within ``stall_timeout_s`` is a ``stall`` — a failure — unless
  the request, as decoded, asks for a longer wait (``waiting``: a mutation raised a
  ``max_wait_ms`` or a ``*timeout_ms``; the broker is right to hold it).

:func:`run_fuzz` drives :class:`FuzzClient` against a :class:`BrokerProcess` and checks,
besides each case: the process is still alive after every case; every ``probe_every``
cases a well-behaved client is still served (a fresh connection doing ApiVersions and
Metadata, and now and then a confluent-kafka produce with acks=all); the broker's RSS
(``VmRSS``) after warm-up stays within ``rss_growth_limit`` bytes at the end.  Findings in
the broker's log (handler exceptions: ``handler for api key N failed``, tracebacks) are
counted per api key for the report — a handler that raises instead of answering with an
error code is a bug, though the connection-only close keeps the broker serving.

Full form: ``python -m riverbed.testing.fuzz --frames 1000000`` (docs/reliability.md); CI
form: tests/fault/test_protocol_fuzz.py.  Single-threaded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import KafkaError, Producer
from confluent_kafka import Message as KafkaMessage

from riverbed.broker.config import BrokerConfig
from riverbed.broker.request_decoding import decode_request
from riverbed.errors import ConfigError
from riverbed.protocol.api import API_BY_KEY
from riverbed.protocol.framing import RequestHeader, decode_response, encode_request
from riverbed.protocol.messages import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)
from riverbed.protocol.messages.base import Message, Struct
from riverbed.protocol.messages.samples import build
from riverbed.protocol.record_build import SimpleRecord, build_batch
from riverbed.testing.broker_process import BrokerProcess, free_port

#: Names drawn for every string field most of the time: real topics, groups and assignors
#: make requests reach the code past "unknown topic".
NAMES = ("fuzz-0", "fuzz-1", "fuzz-2", "", "fuzz-group", "consumer", "range", "fuzz-client")
PROBE_TOPIC = "fuzz-probe"  # never in NAMES: fuzz cases never touch the probe's topic
SENTINEL_ID = 0x5E471E1
#: Broker settings for fuzzing: no initial rebalance delay (every JoinGroup would wait 3 s);
#: idle connections closed after 3 s, so a frame cut short whose declared size does not fit
#: ``queued.max.request.bytes`` (the connection stops reading, so it never sees our
#: half-close) ends in ``closed`` within the stall timeout.
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0", "connections.max.idle.ms": "3000"}
_EDGES = (
    0,
    1,
    -1,
    2**7 - 1,
    -(2**7),
    2**8 - 1,
    2**15 - 1,
    -(2**15),
    2**16 - 1,
    2**31 - 1,
    -(2**31),
    2**32 - 1,
    2**63 - 1,
    -(2**63),
)
_WAIT_FIELD = re.compile(r"(timeout_ms|max_wait_ms)$")
_MAX_WAIT_MS = 300  # waits a case may ask for (long polls, rebalances) are capped here


class Source(Protocol):
    """The random choices a case is made of."""

    def integer(self, low: int, high: int) -> int: ...
    def binary(self, max_size: int) -> bytes: ...


class RandomSource:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def binary(self, max_size: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(0, max_size))


class HypothesisSource:
    """Draws from Hypothesis (``st.data()``), so a failing case shrinks."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._st = st
        self.data = data

    def integer(self, low: int, high: int) -> int:
        value: int = self.data.draw(self._st.integers(low, high))
        return value

    def binary(self, max_size: int) -> bytes:
        value: bytes = self.data.draw(self._st.binary(max_size=max_size))
        return value


class FuzzDraw:
    """:class:`~riverbed.protocol.messages.samples.Draw` with fuzzing-friendly values."""

    def __init__(self, source: Source) -> None:
        self.source = source

    def integer(self, low: int, high: int) -> int:
        kind = self.source.integer(0, 9)
        if kind < 3:
            edges = [e for e in _EDGES if low <= e <= high]
            return edges[self.source.integer(0, len(edges) - 1)]
        if kind < 8:
            return self.source.integer(max(low, -1), min(high, 8))
        return self.source.integer(low, high)

    def boolean(self) -> bool:
        return self.source.integer(0, 1) == 1

    def floating(self) -> float:
        return float(self.source.integer(-(10**6), 10**6))

    def text(self) -> str:
        if self.source.integer(0, 4) < 4:
            return NAMES[self.source.integer(0, len(NAMES) - 1)]
        return self.source.binary(12).decode("latin-1")

    def binary(self) -> bytes:
        return self.source.binary(24)


def fuzz_message(source: Source, cls: type[Message], version: int) -> Message:
    """A valid ``cls`` message for ``version``, waits capped, records often real batches."""
    draw = FuzzDraw(source)
    message: Message = build(draw, cls, cls, version)
    _tame(message, source, version)
    return message


def _tame(value: Struct, source: Source, version: int) -> None:
    for spec in value.FIELDS:
        if not hasattr(value, spec.name):
            continue
        current = getattr(value, spec.name)
        if isinstance(current, int) and not isinstance(current, bool):
            if _WAIT_FIELD.search(spec.name) and current > _MAX_WAIT_MS:
                setattr(value, spec.name, current % _MAX_WAIT_MS)
        elif spec.type == "records" and current is not None and source.integer(0, 1):
            setattr(value, spec.name, _record_batch(source))
        elif isinstance(current, Struct):
            _tame(current, source, version)
        elif isinstance(current, list):
            for item in current:
                if isinstance(item, Struct):
                    _tame(item, source, version)


def _record_batch(source: Source) -> bytes:
    records = [
        SimpleRecord(key=source.binary(8) or None, value=source.binary(32))
        for _ in range(source.integer(1, 3))
    ]
    compression = source.integer(0, 4)
    try:
        return build_batch(records, compression=compression)
    except Exception:  # a codec library missing on this machine: send it uncompressed
        return build_batch(records)


@dataclass(frozen=True, slots=True)
class Case:
    """One frame to send: ``data`` is well framed (exactly one frame) when ``framed``."""

    api_key: int
    api_version: int
    mutation: str
    data: bytes
    framed: bool


def _reframe(body: bytes | bytearray) -> bytes:
    return struct.pack(">i", len(body)) + bytes(body)


def _interesting(source: Source) -> bytes:
    value = _EDGES[source.integer(0, len(_EDGES) - 1)]
    width = (1, 2, 4, 8)[source.integer(0, 3)]
    return (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")


def _m_none(source: Source, body: bytearray) -> bytes:
    return _reframe(body)


def _m_flip(source: Source, body: bytearray) -> bytes:
    for _ in range(source.integer(1, 4)):
        bit = source.integer(0, len(body) * 8 - 1)
        body[bit // 8] ^= 1 << (bit % 8)
    return _reframe(body)


def _m_edge(source: Source, body: bytearray) -> bytes:
    for _ in range(source.integer(1, 3)):
        value = _interesting(source)
        pos = source.integer(0, max(0, len(body) - len(value)))
        body[pos : pos + len(value)] = value
    return _reframe(body)


def _m_truncate(source: Source, body: bytearray) -> bytes:
    return _reframe(body[: source.integer(0, len(body) - 1)])


def _m_insert(source: Source, body: bytearray) -> bytes:
    pos = source.integer(0, len(body))
    return _reframe(body[:pos] + source.binary(16) + body[pos:])


def _m_delete(source: Source, body: bytearray) -> bytes:
    pos = source.integer(0, len(body) - 1)
    return _reframe(body[:pos] + body[pos + source.integer(1, 8) :])


def _m_append(source: Source, body: bytearray) -> bytes:
    return _reframe(body + source.binary(32))


def _m_header(source: Source, body: bytearray) -> bytes:
    if source.integer(0, 1):
        body[0:2] = struct.pack(">h", source.integer(-(2**15), 2**15 - 1))
    else:
        version = struct.unpack_from(">h", body, 2)[0] + source.integer(-3, 3)
        body[2:4] = struct.pack(">h", max(-(2**15), min(2**15 - 1, version)))
    return _reframe(body)


def _m_bad_size(source: Source, body: bytearray) -> bytes:
    sizes = (-1, -(2**31), 2**31 - 1, 100 * 1024 * 1024 + 1 + source.integer(0, 1 << 20))
    return struct.pack(">i", sizes[source.integer(0, len(sizes) - 1)]) + bytes(body)


def _m_short(source: Source, body: bytearray) -> bytes:
    return _reframe(body)[: source.integer(0, len(body) + 3)]


def _m_garbage(source: Source, body: bytearray) -> bytes:
    return source.binary(64)


#: ``(name, well framed?, mutate)``; the first is the unmutated request.
MUTATIONS: tuple[tuple[str, bool, Callable[[Source, bytearray], bytes]], ...] = (
    ("none", True, _m_none),
    ("flip", True, _m_flip),
    ("edge", True, _m_edge),
    ("truncate", True, _m_truncate),
    ("insert", True, _m_insert),
    ("delete", True, _m_delete),
    ("append", True, _m_append),
    ("header", True, _m_header),
    ("bad-size", False, _m_bad_size),
    ("short", False, _m_short),
    ("garbage", False, _m_garbage),
)


def make_case(source: Source, api_key: int, api_version: int, correlation_id: int) -> Case:
    """A request for ``(api_key, api_version)``, then one drawn mutation of its frame."""
    spec = API_BY_KEY[api_key]
    message = fuzz_message(source, spec.request_class, api_version)
    header = RequestHeader(api_key, api_version, correlation_id, "fuzz")
    body = bytearray(encode_request(header, message)[4:])
    # Twice as many unmutated requests as any one mutation: valid requests go deepest.
    pick = source.integer(-1, len(MUTATIONS) - 1)
    name, framed, mutate = MUTATIONS[max(pick, 0)]
    return Case(api_key, api_version, name, mutate(source, body), framed)


@dataclass
class FuzzStats:
    """Counts of one run (see :meth:`summary` for the figures reported)."""

    frames: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    by_api: Counter[str] = field(default_factory=Counter)
    stalls: list[str] = field(default_factory=list)
    probes: int = 0
    rss: list[tuple[int, int]] = field(default_factory=list)  # (frames sent, VmRSS bytes)
    elapsed_s: float = 0.0
    log_findings: Counter[str] = field(default_factory=Counter)

    def summary(self) -> dict[str, Any]:
        rss = [r for _, r in self.rss]
        return {
            "frames": self.frames,
            "elapsed_s": round(self.elapsed_s, 1),
            "frames_per_s": round(self.frames / self.elapsed_s) if self.elapsed_s else None,
            "outcomes": dict(self.outcomes),
            "stalls": len(self.stalls),
            "probes_ok": self.probes,
            "rss_start_mib": round(rss[0] / 2**20, 1) if rss else None,
            "rss_warm_mib": round(rss[1] / 2**20, 1) if len(rss) > 1 else None,
            "rss_end_mib": round(rss[-1] / 2**20, 1) if rss else None,
            "rss_max_mib": round(max(rss) / 2**20, 1) if rss else None,
            "log_findings": dict(self.log_findings),
        }


class FuzzClient:
    """Sends cases to ``host:port`` and classifies the outcome (module docstring)."""

    def __init__(self, port: int, stall_timeout_s: float = 15.0) -> None:
        self.port = port
        self.stall_timeout_s = stall_timeout_s
        self._sock: socket.socket | None = None
        self._buf = bytearray()
        self._sentinel = encode_request(
            RequestHeader(18, 0, SENTINEL_ID, "fuzz-sentinel"), ApiVersionsRequest()
        )

    def _connect(self) -> socket.socket:
        if self._sock is None:
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=30)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(self.stall_timeout_s)
            self._sock = sock
            self._buf = bytearray()
        return self._sock

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def send(self, case: Case) -> str:
        """Send ``case``: ``answered``, ``silent``, ``closed``, ``waiting`` or ``stall``."""
        sock = self._connect()
        try:
            if case.framed:
                sock.sendall(case.data + self._sentinel)
                return self._await_sentinel(sock)
            if case.data:
                sock.sendall(case.data)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(65536):
                pass  # whatever it answers before closing
            self.close()
            return "closed"
        except TimeoutError:
            self.close()
            return "waiting" if asks_to_wait(case, self.stall_timeout_s) else "stall"
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            return "closed"

    def _await_sentinel(self, sock: socket.socket) -> str:
        answered = False
        while True:
            while len(self._buf) >= 8:
                size = struct.unpack_from(">i", self._buf, 0)[0]
                if len(self._buf) < 4 + size:
                    break
                correlation_id = struct.unpack_from(">i", self._buf, 4)[0]
                del self._buf[: 4 + size]
                if correlation_id == SENTINEL_ID:
                    return "answered" if answered else "silent"
                answered = True
            chunk = sock.recv(65536)
            if not chunk:
                self.close()
                return "closed"
            self._buf += chunk


def asks_to_wait(case: Case, seconds: float) -> bool:
    """Whether the case's request, as the broker decodes it, asks for a wait (a long-poll
    ``max_wait_ms``, a ``*timeout_ms``) longer than ``seconds``: a mutation can raise one
    past the cap :func:`fuzz_message` applies, and then no answer in time is correct."""
    if not case.framed:
        return False
    try:
        _, message = decode_request(memoryview(case.data)[4:])
    except Exception:
        return False
    return _longest_wait_ms(message) > seconds * 1000


def _longest_wait_ms(value: Struct) -> int:
    longest = 0
    for spec in value.FIELDS:
        current = getattr(value, spec.name, None)
        if isinstance(current, int) and _WAIT_FIELD.search(spec.name):
            longest = max(longest, current)
        elif isinstance(current, Struct):
            longest = max(longest, _longest_wait_ms(current))
        elif isinstance(current, list):
            longest = max(
                [longest, *(_longest_wait_ms(i) for i in current if isinstance(i, Struct))]
            )
    return longest


def request(
    port: int, api_key: int, version: int, message: Message, timeout_s: float = 30.0
) -> Message:
    """One request on a fresh connection, its decoded response (a well-behaved client)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(encode_request(RequestHeader(api_key, version, 1, "fuzz-probe"), message))
        data = bytearray()
        while len(data) < 4 or len(data) < 4 + struct.unpack_from(">i", data, 0)[0]:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError(f"api key {api_key} v{version}: connection closed")
            data += chunk
        correlation_id, response = decode_response(memoryview(data)[4:], api_key, version)
        assert correlation_id == 1
        return response


def served_versions(port: int) -> list[tuple[int, int]]:
    """Every ``(api key, version)`` the broker advertises in ApiVersions."""
    response = request(
        port, 18, 3, ApiVersionsRequest(client_software_name="fuzz", client_software_version="1")
    )
    assert isinstance(response, ApiVersionsResponse) and response.error_code == 0
    return [
        (a.api_key, v) for a in response.api_keys for v in range(a.min_version, a.max_version + 1)
    ]


def probe(port: int) -> None:
    """A well-behaved client is served: ApiVersions and Metadata on a fresh connection."""
    served_versions(port)
    response = request(
        port,
        3,
        12,
        MetadataRequest(
            topics=[MetadataRequest.MetadataRequestTopic(name=PROBE_TOPIC)],
            allow_auto_topic_creation=True,
        ),
    )
    assert isinstance(response, MetadataResponse), response
    assert response.brokers, "Metadata names no broker"


def probe_produce(bootstrap: str, timeout_s: float = 60.0) -> None:
    """A confluent-kafka acks=all produce to :data:`PROBE_TOPIC` is acknowledged."""
    errors: list[str] = []
    done: list[int] = []

    def report(err: KafkaError | None, msg: KafkaMessage) -> None:
        done.append(1)
        if err is not None:
            errors.append(str(err))

    producer = Producer(
        {"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": int(timeout_s * 1000)}
    )
    producer.produce(PROBE_TOPIC, value=b"probe", on_delivery=report)
    remaining = producer.flush(timeout_s)
    assert remaining == 0 and done and not errors, f"probe produce failed: {errors}"


_LOG_PATTERNS = {
    "handler failed": re.compile(r"handler for api key (-?\d+) failed"),
    "traceback": re.compile(r"^Traceback"),
    "unhandled in event loop": re.compile(r"Unhandled exception|Fatal error"),
}


def scan_log(text: str) -> Counter[str]:
    """Findings in a broker log: handler exceptions per api key, tracebacks."""
    found: Counter[str] = Counter()
    for line in text.splitlines():
        for name, pattern in _LOG_PATTERNS.items():
            match = pattern.search(line)
            if match:
                found[f"{name} (api key {match.group(1)})" if match.groups() else name] += 1
    return found


def case_for(seed: int, index: int, pairs: list[tuple[int, int]]) -> Case:
    """Case ``index`` of the run seeded ``seed`` (first every pair twice, then at random)."""
    rng = random.Random(f"{seed}:{index}")
    if index < 2 * len(pairs):
        api_key, version = pairs[index % len(pairs)]
    else:
        api_key, version = pairs[rng.randrange(len(pairs))]
    return make_case(RandomSource(rng), api_key, version, rng.randrange(2**31))


def run_fuzz(
    broker: BrokerProcess,
    frames: int,
    seed: int,
    *,
    probe_every: int = 1000,
    produce_probe_every: int = 20_000,
    warmup: int | None = None,
    stall_timeout_s: float = 15.0,
    progress: Callable[[str], None] | None = None,
) -> FuzzStats:
    """Send ``frames`` cases to a running ``broker`` and check it after each (docstring).

    Raises AssertionError when the broker dies or a well-behaved client is not served;
    stalls and log findings are returned in the stats for the caller to judge.
    """
    stats = FuzzStats()
    port = broker.port
    pairs = served_versions(port)
    warmup = min(frames // 10, 20_000) if warmup is None else warmup
    probe_produce(broker.bootstrap_servers)
    stats.rss.append((0, broker.rss_bytes()))
    client = FuzzClient(port, stall_timeout_s)
    started = time.monotonic()
    try:
        for index in range(frames):
            case = case_for(seed, index, pairs)
            outcome = client.send(case)
            stats.frames += 1
            stats.outcomes[outcome] += 1
            stats.by_api[f"{case.api_key}:{outcome}"] += 1
            if outcome == "stall":
                stats.stalls.append(
                    f"seed={seed} case={index} api={case.api_key} "
                    f"v{case.api_version} {case.mutation} {case.data[:64].hex()}"
                )
                if progress is not None:
                    progress(f"stall: {stats.stalls[-1]}")
            if not broker.alive():
                raise AssertionError(
                    f"broker died at case {index} (seed {seed}, "
                    f"api {case.api_key} v{case.api_version} "
                    f"{case.mutation}):\n{broker.tail()}"
                )
            if index + 1 == warmup:
                stats.rss.append((index + 1, broker.rss_bytes()))
            if (index + 1) % probe_every == 0:
                probe(port)
                stats.probes += 1
                if progress is not None:
                    rate = (index + 1) / (time.monotonic() - started)
                    progress(
                        f"{index + 1}/{frames} frames, {rate:.0f}/s, "
                        f"rss {broker.rss_bytes() / 2**20:.1f} MiB, {dict(stats.outcomes)}"
                    )
            if (index + 1) % produce_probe_every == 0:
                probe_produce(broker.bootstrap_servers)
    finally:
        client.close()
        stats.elapsed_s = time.monotonic() - started
    probe(port)
    probe_produce(broker.bootstrap_servers)
    stats.probes += 1
    stats.rss.append((frames, broker.rss_bytes()))
    stats.log_findings = scan_log(broker.log_path.read_text(errors="replace"))
    return stats


GLIBC_MALLOC_DEFAULTS = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_TRIM_THRESHOLD_": "131072"}
"""The fuzzed broker runs with glibc's own malloc thresholds (128 KiB), not the ones
``riverbed broker`` sets (:mod:`riverbed.broker.allocator`: freed blocks up to 32 MiB stay
in the heap and up to 64 MiB of free heap is kept, a bounded amount by design).  Fuzzed
frames declare sizes up to the request limit, and with the broker's settings their freed
buffers stay resident (+30 MiB in one CI run): the RSS check is for leaks, so it measures
the live set, not the allocator's retained free memory."""


def start_broker(work_dir: Path, log_level: str = "ERROR") -> BrokerProcess:
    """A broker child configured for fuzzing (:data:`BROKER_CONFIG`), started."""
    config = dict(BROKER_CONFIG)
    try:
        BrokerConfig.from_props({"connections.max.idle.ms": "3000"})
    except ConfigError:  # a broker without idle-connection closing (nor request memory limit)
        del config["connections.max.idle.ms"]
    broker = BrokerProcess(
        work_dir / "data",
        free_port(),
        work_dir / "broker.log",
        config=config,
        log_level=log_level,
        env=GLIBC_MALLOC_DEFAULTS,
    )
    broker.start()
    return broker


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m riverbed.testing.fuzz",
        description="Fuzz every request type a riverbed broker serves; exit 1 on a stall, "
        "an RSS growth over the limit, or a handler exception in its log.",
    )
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--case", type=int, default=None, help="replay only this case index of --seed (prints it)"
    )
    parser.add_argument(
        "--stall-timeout-s",
        type=float,
        default=15.0,
        help="how long a case may go unanswered and unclosed",
    )
    parser.add_argument("--rss-growth-limit-mib", type=float, default=64.0)
    parser.add_argument("--work-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="riverbed-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    broker = start_broker(work, log_level="INFO" if args.case is not None else "ERROR")
    try:
        if args.case is not None:
            pairs = served_versions(broker.port)
            case = case_for(seed, args.case, pairs)
            print(case, flush=True)
            print("outcome:", FuzzClient(broker.port).send(case), "alive:", broker.alive())
            print(broker.tail(40))
            return 0
        print(f"work dir {work}, seed {seed}, load {os.getloadavg()}", flush=True)
        stats = run_fuzz(
            broker,
            args.frames,
            seed,
            probe_every=10_000,
            stall_timeout_s=args.stall_timeout_s,
            progress=lambda s: print(s, flush=True),
        )
    finally:
        broker.close()
    summary = stats.summary()
    print(json.dumps(summary), flush=True)
    for stall in stats.stalls[:10]:
        print("stall:", stall)
    growth = (stats.rss[-1][1] - stats.rss[1][1]) / 2**20 if len(stats.rss) > 2 else 0.0
    bad = (
        stats.stalls
        or growth > args.rss_growth_limit_mib
        or any(not k.startswith("traceback") for k in stats.log_findings)
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
