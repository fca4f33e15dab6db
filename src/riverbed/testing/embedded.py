"""An in-process broker for tests and demos, on its own event loop in a background thread.

::

    with EmbeddedBroker(data_dir=tmp_path, config={"num.partitions": "3"}) as broker:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers})

The broker listens on ``127.0.0.1`` and, by default, an ephemeral port (``port=0``).
``start()`` returns once it accepts connections (or raises what start-up raised);
``stop()`` shuts it down cleanly (in-flight requests answered, logs flushed) and joins
the thread.  ``restart()`` does both on the same data dir and port, for durability tests.
:meth:`call` runs a coroutine function on the broker's loop from the test's thread,
e.g. to inspect state without races.  Thread-safe: start/stop from one thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

from riverbed.broker.config import BrokerConfig
from riverbed.broker.server import Broker, new_event_loop
from riverbed.clock import SYSTEM_CLOCK, Clock
from riverbed.testing.lifecycle import StartStopContext

T = TypeVar("T")


class EmbeddedBroker(StartStopContext):
    """A :class:`~riverbed.broker.server.Broker` running in a background thread."""

    def __init__(
        self,
        data_dir: Path | str,
        config: Mapping[str, str] | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        clock: Clock = SYSTEM_CLOCK,
        start_timeout_s: float = 30.0,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.config = BrokerConfig.from_props(dict(config or {}))
        self._host = host
        self._port = port
        self._clock = clock
        self._start_timeout_s = start_timeout_s
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop_event: asyncio.Event | None = None
        self._broker: Broker | None = None

    @property
    def broker(self) -> Broker:
        assert self._broker is not None, "embedded broker not started"
        return self._broker

    @property
    def port(self) -> int:
        return self.broker.port

    @property
    def bootstrap_servers(self) -> str:
        return self.broker.bootstrap_servers

    def start(self) -> EmbeddedBroker:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(
            target=self._run, args=(started,), name="riverbed-embedded-broker", daemon=True
        )
        self._thread.start()
        started.result(timeout=self._start_timeout_s)
        self._port = self.broker.port  # a restart reuses the port
        return self

    def _run(self, started: concurrent.futures.Future[None]) -> None:
        loop = new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._main(started))
        except BaseException as exc:
            if not started.done():
                started.set_exception(exc)
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _main(self, started: concurrent.futures.Future[None]) -> None:
        self._stop_event = asyncio.Event()
        broker = Broker(
            self.data_dir, self.config, host=self._host, port=self._port, clock=self._clock
        )
        self._broker = broker
        await broker.start()
        started.set_result(None)
        try:
            await self._stop_event.wait()
        finally:
            await broker.stop()

    def call(self, fn: Callable[[Broker], Coroutine[Any, Any, T]], timeout_s: float = 30) -> T:
        """Run ``fn(broker)`` on the broker's loop and return its result."""
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(fn(self.broker), self._loop).result(timeout_s)

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._loop is not None and self._stop_event is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop_event.set)
        self._thread.join(timeout=60)
        self._thread = None

    def restart(self) -> None:
        self.stop()
        self.start()
