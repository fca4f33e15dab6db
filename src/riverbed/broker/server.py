"""The broker: owns the log, the topic metadata and the listening socket.

Life cycle: :meth:`Broker.start` raises the soft open-files limit to the hard one, binds
the listening socket (so a port in use is reported before anything is written), opens
the data dir (``meta.json``, ``topics.json``,
``producer_ids.json`` and the storage layer's partition directories; an OSError there is
a one-line :class:`~riverbed.errors.DataDirError`), then starts accepting;
:meth:`Broker.stop` closes the listener, stops reading from every connection, answers the
requests in flight (waking long-poll fetches at once), closes the sockets and finally
closes the log manager, which flushes every partition (if that fails — a full disk — every
other partition is still closed on its own and stop raises one-line
:class:`~riverbed.errors.BrokerStopError`).  A crash instead of a stop loses
nothing acknowledged under the flush policy (storage recovers the tail on next start).

All broker state is touched from the event loop thread only; the storage layer is
thread-safe and its fsyncs complete through futures, and topic changes (partition
directories) run on the topic manager's worker thread, so the loop does not wait on
fsyncs.  Start-up opens the logs and the topics on a worker thread too.

Limits (``docs/broker.md``, "Limits"): the request memory pool and the connection quotas
live here (:mod:`riverbed.broker.limits`); a sweeper closes connections idle for longer
than ``connections.max.idle.ms``.

Handlers (``riverbed.broker.handlers``) are plain functions ``(deps, ctx, request)``,
each declaring the narrow services it uses as a protocol the broker satisfies; they are
bound to the broker once, here (:func:`~riverbed.broker.handlers.bind_handlers`), and the
connection calls them with a :class:`~riverbed.broker.context.RequestContext`.  They
return a response, None (no response) or an awaitable of either; see
:mod:`riverbed.broker.connection` for the ordering contract.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import resource
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from riverbed.broker.cluster import load_or_create_cluster_id
from riverbed.broker.config import BrokerConfig
from riverbed.broker.connection import KafkaConnection
from riverbed.broker.groups import GroupService
from riverbed.broker.handlers import MIN_ACCEPTED_VERSIONS, Route, bind_handlers
from riverbed.broker.handlers.api_versions import unsupported_version_response
from riverbed.broker.limits import ConnectionQuotas, MemoryPool
from riverbed.broker.metrics_endpoint import MetricsEndpoint
from riverbed.broker.metrics_service import broker_metrics, start_metrics_endpoint
from riverbed.broker.producer_ids import ProducerIdManager
from riverbed.broker.purgatory import FetchPurgatory
from riverbed.broker.quota_store import ClientQuotaStore
from riverbed.broker.quotas import ClientQuotaManager, Tags, quota_config_from_props
from riverbed.broker.security.acl_store import AclStore
from riverbed.broker.security.authorizer import Authorizer, authorizer_from_props
from riverbed.broker.security.endpoint import ListenerEndpoint, build_endpoints
from riverbed.broker.security.listeners import Listener, SecurityProtocol
from riverbed.broker.security.scram_store import ScramCredentialStore
from riverbed.broker.share_groups import ShareGroupService
from riverbed.broker.topics import TopicManager
from riverbed.broker.transactions import TransactionService
from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.coordinator.config import coordinator_config_from_props
from riverbed.errors import BrokerStopError, ConfigError, DataDirError, describe_os_error
from riverbed.protocol.framing import RequestHeader
from riverbed.storage import fd_cache
from riverbed.storage.manager import LogManager, LogsNotClosedError
from riverbed.storage.uring import FsyncRing

log = logging.getLogger(__name__)

# File descriptors kept back from max.connections beyond the segment fd cache: indexes,
# state files, the listener, threads' files.
MIN_FD_RESERVE = 256


class Broker:
    """A single-node Kafka-protocol broker on one data dir (see the module docstring)."""

    def __init__(
        self,
        data_dir: Path,
        config: BrokerConfig | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 9092,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = config or BrokerConfig()
        self.clock = clock
        self.host = self.config.advertised_host or host
        self.port = port
        self.node_id = self.config.node_id
        self.connections: set[KafkaConnection] = set()
        self.purgatory = FetchPurgatory()
        self.request_pool = MemoryPool(self.config.queued_max_request_bytes)
        self.quotas = ConnectionQuotas(
            self.config.max_connections, self.config.max_connections_per_ip
        )
        self._idle_sweeper: asyncio.Task[None] | None = None
        self.closing = False
        self._servers: list[asyncio.base_events.Server] = []  # one per listener
        # Kafka's listeners (riverbed.broker.security); none configured: one PLAINTEXT
        # listener on host:port.  The first one is the broker's host/port.
        self._listeners = list(self.config.listeners) or [
            Listener("PLAINTEXT", SecurityProtocol.PLAINTEXT, host, port)
        ]
        self.endpoints: list[ListenerEndpoint] = []
        self._scram: ScramCredentialStore | None = None
        # ACLs (riverbed.broker.security.authorizer): None unless authorizer.class.name
        # is set, then the gates of handlers/authorization.py check it; the store once started.
        self.authorizer: Authorizer | None = None
        self._acl_store: AclStore | None = None
        # Client quotas (riverbed.broker.quotas): byte-rate sensors; the store once started.
        self._client_quota_store: ClientQuotaStore | None = None
        self.client_quotas = ClientQuotaManager(
            self._client_quota, clock, quota_config_from_props(self.config.source)
        )
        self._logs: LogManager | None = None
        self._topics: TopicManager | None = None
        self._producer_ids: ProducerIdManager | None = None
        self._groups: GroupService | None = None  # consumer groups (riverbed.broker.groups)
        self._transactions: TransactionService | None = None  # riverbed.broker.transactions
        self._share_groups: ShareGroupService | None = None  # riverbed.broker.share_groups
        self.cluster_id = ""
        self._handlers: dict[int, Route] = bind_handlers(self)
        # Prometheus metrics (riverbed.broker.metrics): None unless metrics.listen is set.
        self.metrics = broker_metrics(
            self.config.source, lambda tid: getattr(self.topics.by_id(tid), "name", None)
        )
        self._metrics_endpoint: MetricsEndpoint | None = None

    # -- wiring -----------------------------------------------------------------------
    @property
    def topics(self) -> TopicManager:
        assert self._topics is not None, "broker not started"
        return self._topics

    @property
    def logs(self) -> LogManager:
        assert self._logs is not None, "broker not started"
        return self._logs

    @property
    def producer_ids(self) -> ProducerIdManager:
        assert self._producer_ids is not None, "broker not started"
        return self._producer_ids

    @property
    def groups(self) -> GroupService:
        """The group coordinator (consumer groups; riverbed.broker.groups)."""
        assert self._groups is not None, "broker not started"
        return self._groups

    @property
    def acl_store(self) -> AclStore:
        """ACL bindings (``acls.json``; riverbed.broker.security.acl_store)."""
        assert self._acl_store is not None, "broker not started"
        return self._acl_store

    @property
    def transactions(self) -> TransactionService:
        """The transaction coordinator (riverbed.broker.transactions)."""
        assert self._transactions is not None, "broker not started"
        return self._transactions

    @property
    def share_groups(self) -> ShareGroupService:
        """Share groups (KIP-932; riverbed.broker.share_groups)."""
        assert self._share_groups is not None, "broker not started"
        return self._share_groups

    @property
    def scram_credentials(self) -> ScramCredentialStore:
        """SCRAM users (``scram_credentials.json``; riverbed.broker.security)."""
        assert self._scram is not None, "broker not started"
        return self._scram

    @property
    def client_quota_store(self) -> ClientQuotaStore:
        """Client quota configuration (``client_quotas.json``; riverbed.broker.quotas)."""
        assert self._client_quota_store is not None, "broker not started"
        return self._client_quota_store

    def _client_quota(self, user: str, client_id: str, key: str) -> tuple[float, Tags] | None:
        store = self._client_quota_store
        return None if store is None else store.lookup(user, client_id, key)

    def endpoint(self, listener: str) -> tuple[str, int]:
        """The advertised ``(host, port)`` of ``listener`` (its bound port once started)."""
        for endpoint in self.endpoints:
            if endpoint.name == listener.upper():
                return endpoint.advertised
        raise KeyError(listener)

    @property
    def bootstrap_servers(self) -> str:
        return f"{self.host}:{self.port}"

    def connection_closed(self, connection_id: int) -> None:
        """A client connection is gone: the share sessions opened on it close and release
        their records (Kafka 4 does so on disconnect)."""
        if self._share_groups is not None and not self.closing:
            self._share_groups.connection_closed(connection_id)

    def handler_for(self, api_key: int) -> Route | None:
        """The handler serving ``api_key``, bound to this broker: ``(ctx, request)``."""
        return self._handlers.get(api_key)

    def min_accepted_version(self, api_key: int) -> int:
        """Lowest version served (may be above the advertised minimum, see handlers)."""
        return MIN_ACCEPTED_VERSIONS.get(api_key, 0)

    def served_api_keys(self) -> list[int]:
        return sorted(self._handlers)

    def unsupported_version_response(
        self, header: RequestHeader
    ) -> tuple[RequestHeader, Any] | None:
        """Kafka's answer to a request version we lack: only ApiVersions gets one."""
        return unsupported_version_response(self, header)

    # -- life cycle -------------------------------------------------------------------
    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        limits_line = self._apply_open_files_limit()
        # TLS files are read (and SASL settings checked) before anything is bound.
        self.endpoints = build_endpoints(
            self.config.source, self._listeners, self.config.advertised_host
        )
        try:
            for endpoint in self.endpoints:
                self._servers.append(await self._bind(loop, endpoint))
            if self.metrics is not None:
                self._metrics_endpoint = start_metrics_endpoint(
                    self.metrics, self.config.source, loop, lambda: self._logs, lambda: self._groups
                )
            await self._open_data_dir(loop)
        except BaseException:
            for server in self._servers:
                server.close()
            if self._metrics_endpoint is not None:
                self._metrics_endpoint.close()
            raise
        if self.metrics is not None:  # fsync durations and group-commit batch sizes
            self.logs.flusher.observer = self.metrics
        if self.config.flush_io_uring:  # acks' fsyncs completed on this loop
            self.logs.flusher.attach_ring(FsyncRing.open(loop))
        for server, endpoint in zip(self._servers, self.endpoints, strict=True):
            endpoint.bound_port = int(server.sockets[0].getsockname()[1])
        for server in self._servers:  # ports known first: connections advertise them
            await server.start_serving()
        self.host, self.port = self.endpoints[0].advertised
        if self.config.connections_max_idle_ms > 0:
            self._idle_sweeper = asyncio.ensure_future(self._sweep_idle())
        for endpoint in self.endpoints:
            log.info(
                "broker %d listening on %s:%d (%s, %s; data dir %s, cluster %s)",
                self.node_id,
                endpoint.listener.host or "0.0.0.0",
                endpoint.bound_port,
                endpoint.name,
                endpoint.protocol.value,
                self.data_dir,
                self.cluster_id,
            )
        log.info("%s", limits_line)

    async def _bind(
        self, loop: asyncio.AbstractEventLoop, endpoint: ListenerEndpoint
    ) -> asyncio.base_events.Server:
        """A listening socket for ``endpoint`` (TLS when it has a context), not serving."""
        host = endpoint.listener.host or None  # empty: every interface, as Kafka
        try:
            sock = _bound_socket(host, endpoint.listener.port)
            if sock is not None:
                return await loop.create_server(
                    lambda: KafkaConnection(self, endpoint),
                    sock=sock,
                    start_serving=False,
                    ssl=endpoint.ssl_context,
                )
            return await loop.create_server(
                lambda: KafkaConnection(self, endpoint),
                host,
                endpoint.listener.port,
                reuse_address=True,
                start_serving=False,
                ssl=endpoint.ssl_context,
            )
        except OSError as exc:
            raise ConfigError(
                f"cannot listen on {endpoint.listener.host}:{endpoint.listener.port}"
                f" ({endpoint.name}): {exc.strerror}"
            ) from None

    async def _open_data_dir(self, loop: asyncio.AbstractEventLoop) -> None:
        """Everything start() does on disk; an OSError becomes one DataDirError line."""
        try:
            if self.data_dir.exists() and not self.data_dir.is_dir():
                raise DataDirError(f"data dir {self.data_dir} is a file, not a directory")
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.cluster_id = load_or_create_cluster_id(self.data_dir)
            self._logs = await loop.run_in_executor(
                None,
                lambda: LogManager(
                    self.data_dir,
                    clock=self.clock,
                    retention_check_interval_ms=self.config.log_retention_check_interval_ms,
                ),
            )
        except OSError as exc:
            raise self._data_dir_error(exc) from None
        try:
            logs = self._logs
            self._topics = await loop.run_in_executor(
                None, lambda: TopicManager(self.data_dir, logs, self.config)
            )
            self._producer_ids = ProducerIdManager(self.data_dir)
            self._scram = ScramCredentialStore(self.data_dir)
            self._acl_store = AclStore(self.data_dir)
            self.authorizer = authorizer_from_props(self.config.source, self._acl_store)
            self._client_quota_store = ClientQuotaStore(self.data_dir)
            # -- consumer groups: replay __consumer_offsets (riverbed.broker.groups) --
            # (created on first use, as Kafka does: a fresh start creates no topic)
            group_config = coordinator_config_from_props(self.config.source)
            self._groups = GroupService(self, group_config)
            self._groups.load()
            # -- transactions: replay __transaction_state if it exists, re-send markers --
            self._transactions = TransactionService(self, self._producer_ids.next_producer_id)
            self._transactions.load()
            # -- share groups: replay __share_group_state if it exists --
            self._share_groups = ShareGroupService(self)
            await self._share_groups.load()
        except OSError as exc:
            self._logs.close()
            raise self._data_dir_error(exc) from None
        except BaseException:
            self._logs.close()
            raise

    def _data_dir_error(self, exc: OSError) -> DataDirError:
        """``cannot use data dir D: read-only file system (EROFS) at D/meta.json.tmp``."""
        if exc.filename is not None and Path(exc.filename) == self.data_dir:
            exc = OSError(exc.errno, exc.strerror)  # the path is already in the line
        return DataDirError(f"cannot use data dir {self.data_dir}: {describe_os_error(exc, 'at')}")

    def _apply_open_files_limit(self) -> str:
        """Raise the soft RLIMIT_NOFILE to the hard limit and keep max.connections under
        it, so new connections are refused with a log line instead of failing accept();
        the line to log once listening (a start that fails prints only its error)."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        raised_from = None
        if hard != resource.RLIM_INFINITY and soft != hard:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
                raised_from, soft = soft, hard
            except (ValueError, OSError) as exc:
                log.warning("cannot raise the open files limit to %d: %s", hard, exc)
        limit = self.config.max_connections
        if soft != resource.RLIM_INFINITY:
            # Segment files come from the process-wide fd cache (a quarter of the limit,
            # at most 4096); keep those, plus room for index, state and other files.
            reserve = fd_cache.shared().capacity + max(MIN_FD_RESERVE, soft // 8)
            limit = min(limit, max(soft - reserve, 1))
        self.quotas.max_connections = limit
        return (
            f"open files limit {'unlimited' if soft == resource.RLIM_INFINITY else soft}"
            f"{f' (soft limit raised from {raised_from})' if raised_from is not None else ''}"
            f"; accepting at most {limit} connections "
            f"(max.connections {self.config.max_connections})"
        )

    async def _sweep_idle(self) -> None:
        """Close connections idle past connections.max.idle.ms (Kafka's idle timeout)."""
        idle_s = self.config.connections_max_idle_ms / 1000
        interval = min(max(idle_s / 4, 0.05), 30.0)
        while not self.closing:
            await asyncio.sleep(interval)
            now = time.monotonic()
            for conn in list(self.connections):
                if now - conn.last_active > idle_s and conn.idle():
                    log.info(
                        "closing connection from %s: idle for more than "
                        "connections.max.idle.ms (%d)",
                        conn.peer,
                        self.config.connections_max_idle_ms,
                    )
                    conn.close()

    async def stop(self, timeout_s: float = 10.0) -> None:
        """Close listeners, finish in-flight requests, close sockets, flush logs."""
        if self.closing:
            return
        self.closing = True
        if self._idle_sweeper is not None:
            self._idle_sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._idle_sweeper
        for server in self._servers:
            server.close()
        for conn in list(self.connections):
            conn.stop_reading()
        self.purgatory.notify_all()
        if self._groups is not None:  # answer waiting joins/syncs (riverbed.broker.groups)
            self._groups.close()
        if self._transactions is not None:  # timers and marker writers
            self._transactions.close()
        if self._share_groups is not None:  # timers, waiting share fetches
            self._share_groups.close()
        loop = asyncio.get_running_loop()
        in_flight = [t for c in self.connections for t in c.in_flight_tasks()]
        if in_flight:
            await asyncio.wait(in_flight, timeout=timeout_s)
        for conn in list(self.connections):
            conn.close()
        for server in self._servers:
            await server.wait_closed()
        if self._metrics_endpoint is not None:
            await loop.run_in_executor(None, self._metrics_endpoint.close)
        if self._topics is not None:
            await loop.run_in_executor(None, self._topics.close)
        if self._logs is not None:
            logs = self._logs
            try:
                await loop.run_in_executor(None, logs.close)
            except Exception as exc:  # a full or failing disk: every other log was closed
                unclean = exc.partitions if isinstance(exc, LogsNotClosedError) else []
                raise BrokerStopError(self._stop_failure(exc, unclean)) from None
        log.info("broker %d stopped", self.node_id)

    def _stop_failure(self, exc: Exception, unclean: list[str]) -> str:
        """One line: what failed, where, how full the disk is, which logs it affects."""
        cause: BaseException = exc
        while not isinstance(cause, OSError) and cause.__cause__ is not None:
            cause = cause.__cause__
        what = describe_os_error(cause, "writing") if isinstance(cause, OSError) else str(exc)
        where = "" if getattr(cause, "filename", None) else f" in {self.data_dir}"
        try:
            usage = shutil.disk_usage(self.data_dir)
            space = f" ({usage.free} of {usage.total} bytes free)"
        except OSError:
            space = ""
        shown = ", ".join(unclean[:5]) + (", ..." if len(unclean) > 5 else "")
        return (
            f"stopped without a clean shutdown: {what}{where}{space}; "
            f"{len(unclean)} partition log(s) not closed cleanly ({shown or 'none'}), "
            "recovered at the next start"
        )

    async def serve_until(self, stop: asyncio.Event) -> None:
        """Start, serve until ``stop`` is set, then stop cleanly."""
        await self.start()
        try:
            await stop.wait()
        finally:
            await self.stop()


def _bound_socket(host: str | None, port: int) -> socket.socket | None:
    """A socket bound to ``host:port`` (SO_REUSEADDR, as ``create_server`` sets) when
    ``host`` is a numeric IPv4/IPv6 address, else None (the loop resolves the name).

    Passing the loop a numeric host still makes it encode the host with the ``idna``
    codec, whose import (``stringprep``, ``unicodedata``) is a measurable part of a fresh
    start; a socket bound here skips name resolution altogether.  Raises OSError as
    ``bind`` does (the caller turns it into one ConfigError line).
    """
    if host is None:
        return None
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:  # as asyncio's create_server: IPv6 only
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.setblocking(False)
    except BaseException:
        sock.close()
        raise
    return sock


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop where uvloop is installed, else asyncio's default."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop
