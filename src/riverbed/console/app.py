"""The console's web application: a Starlette app of server-rendered pages.

Pages (all GET; query parameters only, so every view is a shareable URL)::

    /                          redirect to /topics
    /topics                    topics, partition counts, record counts
    /topics/{topic}            partitions (leader, replicas, log start offset, high
                               watermark) and configs
    /topics/{topic}/messages   browser: ?partition=N&offset=N | &timestamp=MS|ISO-8601,
                               &key=K, &limit=N (a Next link pages on)
    /groups, /groups/{group}   consumer groups with lag per partition
    /share-groups              share groups (KIP-932) with start offset and lag per partition
    /transactions[/{id}]       transactional ids, state, partitions
    /throughput                records/s per topic, sampled server-side (?fragment=1: the
                               chart table alone, for the page's refresh script)
    /connectors                CDC connector positions and Spark pipelines' progress
    /healthz                   "ok" (no cluster call)

**Threads.**  Every Kafka client call blocks, so handlers run it with :func:`blocking`: on
the app's thread pool, bounded by ``timeout_s``.  The event loop never waits on a broker;
a call that overruns is abandoned (its thread finishes on its own) and the page shows a
banner.  A background task samples high watermarks every ``sample_interval_s``.

**Errors.**  An unreachable cluster or a timed-out call gives the page with an error banner
(HTTP 503), a request the cluster failed one with its error (502); bad input or an
unknown name gives a one-line message (400 or 404).  Never a
traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from riverbed.cli.kafka_admin import BrokerUnreachableError
from riverbed.console.cluster import MAX_BROWSE, Cluster, ConsoleError, NotFoundError
from riverbed.console.pipelines import SHOWN, scrape
from riverbed.console.templates import environment
from riverbed.console.throughput import ThroughputSampler, sparkline_svg

T = TypeVar("T")

NAV = (
    ("/topics", "Topics"),
    ("/groups", "Consumer groups"),
    ("/share-groups", "Share groups"),
    ("/transactions", "Transactions"),
    ("/throughput", "Throughput"),
    ("/connectors", "Connectors & pipelines"),
)


class BadInput(ConsoleError):
    """A query parameter the page cannot use (HTTP 400)."""


class Console:
    """State shared by the handlers: the cluster, the pool, the sampler, the templates."""

    def __init__(
        self,
        bootstrap: str,
        pipeline_urls: Sequence[str] = (),
        *,
        timeout_s: float = 15.0,
        sample_interval_s: float = 2.0,
        properties: Sequence[str] = (),
        query_names: Mapping[str, str] | None = None,
    ) -> None:
        self.cluster = Cluster(bootstrap, max(timeout_s - 2.0, 1.0), properties)
        self.pipeline_urls = tuple(pipeline_urls)
        self.query_names: Mapping[str, str] = query_names if query_names is not None else {}
        self.timeout_s = timeout_s
        self.sample_interval_s = sample_interval_s
        self.sampler = ThroughputSampler()
        self.sample_error: str | None = None
        self.env = environment()
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="riverbed-console")

    async def blocking(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on the pool; :class:`ConsoleError` once ``timeout_s`` has passed."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(self.pool, functools.partial(fn, *args, **kwargs))
        try:
            return await asyncio.wait_for(future, self.timeout_s)
        except TimeoutError:
            raise BrokerUnreachableError(
                f"the cluster at {self.cluster.bootstrap} did not answer within {self.timeout_s:g}s"
            ) from None

    def page(
        self, request: Request, template: str, title: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        section = "/" + request.url.path.strip("/").split("/")[0]
        html = self.env.get_template(template).render(
            title=title,
            nav=NAV,
            section=section,
            bootstrap=self.cluster.bootstrap,
            error=context.pop("error", None),
            **context,
        )
        return HTMLResponse(html, status_code=status)

    async def sample_forever(self) -> None:
        """Sample high watermarks every ``sample_interval_s`` until cancelled."""
        while True:
            try:
                hw = await self.blocking(self.cluster.high_watermarks)
                self.sampler.record(time.monotonic(), hw)
                self.sample_error = None
            except (ConsoleError, BrokerUnreachableError) as exc:
                self.sample_error = str(exc)
            await asyncio.sleep(self.sample_interval_s)


def _int(request: Request, name: str, default: int | None = None) -> int | None:
    text = request.query_params.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise BadInput(f"{name} must be a whole number, got {text!r}") from None


def _timestamp(text: str) -> int | None:
    """Milliseconds since the epoch, or an ISO-8601 datetime (UTC when no offset given)."""
    text = text.strip()
    if not text:
        return None
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise BadInput(
            f"timestamp must be milliseconds or an ISO-8601 datetime, got {text!r}"
        ) from None
    return int((when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() * 1000)


def _console(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


async def topics_page(request: Request) -> Response:
    c = _console(request)
    topics = await c.blocking(c.cluster.topics)
    return c.page(request, "topics", "Topics", topics=topics)


async def topic_page(request: Request) -> Response:
    c = _console(request)
    name = request.path_params["topic"]
    topic = await c.blocking(c.cluster.topic, name)
    return c.page(request, "topic", f"Topic {name}", topic=topic)


async def messages_page(request: Request) -> Response:
    c = _console(request)
    name = request.path_params["topic"]
    form = {
        "partition": _int(request, "partition", 0),
        "offset": request.query_params.get("offset", ""),
        "timestamp": request.query_params.get("timestamp", ""),
        "key": request.query_params.get("key", ""),
        "limit": request.query_params.get("limit", "") or "20",
    }
    offset = _int(request, "offset")
    timestamp = _timestamp(request.query_params.get("timestamp", ""))
    limit = _int(request, "limit", 20)
    assert limit is not None and form["partition"] is not None
    if limit < 1 or limit > MAX_BROWSE:
        raise BadInput(f"limit must be between 1 and {MAX_BROWSE}, got {limit}")
    if offset is not None and timestamp is not None:
        raise BadInput("give an offset or a timestamp, not both")
    partitions = await c.blocking(c.cluster.topic_partitions, name)
    result = await c.blocking(
        c.cluster.browse,
        name,
        form["partition"],
        offset=offset,
        timestamp_ms=timestamp,
        key=form["key"] or None,
        limit=limit,
    )
    following = None
    if result.records and not form["key"]:
        last = result.records[-1].offset
        following = f"?partition={form['partition']}&offset={last + 1}&limit={limit}"
    return c.page(
        request,
        "messages",
        f"Messages in {name}",
        following=following,
        form=form,
        partitions=sorted(partitions),
        result=result,
    )


async def groups_page(request: Request) -> Response:
    c = _console(request)
    groups = await c.blocking(c.cluster.consumer_groups)
    return c.page(
        request,
        "groups",
        "Consumer groups",
        groups=groups,
        kind="consumer",
        link="/groups/",
        offset_label="Committed offset",
    )


async def group_page(request: Request) -> Response:
    c = _console(request)
    name = request.path_params["group"]
    group = await c.blocking(c.cluster.consumer_group, name)
    return c.page(
        request,
        "groups",
        f"Consumer group {name}",
        groups=[group],
        kind="consumer",
        link="",
        offset_label="Committed offset",
    )


async def share_groups_page(request: Request) -> Response:
    c = _console(request)
    groups = await c.blocking(c.cluster.share_groups)
    return c.page(
        request,
        "groups",
        "Share groups",
        groups=groups,
        kind="share",
        link="",
        offset_label="Start offset",
    )


async def transactions_page(request: Request) -> Response:
    c = _console(request)
    txns = await c.blocking(c.cluster.transactions)
    return c.page(request, "transactions", "Transactions", transactions=txns)


async def transaction_page(request: Request) -> Response:
    c = _console(request)
    tid = request.path_params["transactional_id"]
    txn = await c.blocking(c.cluster.transaction, tid)
    return c.page(request, "transaction", f"Transaction {tid}", t=txn)


def _chart_rows(c: Console) -> list[dict[str, Any]]:
    rows = []
    for topic in c.sampler.topics():
        rates = c.sampler.rates(topic)
        rows.append(
            {
                "topic": topic,
                "offsets": c.sampler.latest(topic),
                "rate": rates[-1] if rates else 0.0,
                "svg": sparkline_svg(rates, label=f"{topic} records/s"),
            }
        )
    return rows


async def throughput_page(request: Request) -> Response:
    c = _console(request)
    context: dict[str, Any] = {
        "rows": _chart_rows(c),
        "samples": max((len(c.sampler.rates(t)) + 1 for t in c.sampler.topics()), default=0),
        "interval": c.sample_interval_s,
    }
    if request.query_params.get("fragment"):
        return HTMLResponse(c.env.get_template("charts").render(**context))
    return c.page(request, "throughput", "Throughput", error=c.sample_error, **context)


async def connectors_page(request: Request) -> Response:
    c = _console(request)
    positions = await c.blocking(c.cluster.cdc_positions)
    scrapes = await asyncio.gather(*(c.blocking(scrape, url) for url in c.pipeline_urls))
    return c.page(
        request,
        "connectors",
        "Connectors & pipelines",
        positions=positions,
        scrapes=scrapes,
        shown=SHOWN,
        query_names=c.query_names,
    )


async def healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def home(request: Request) -> Response:
    return RedirectResponse("/topics")


async def _unreachable(request: Request, exc: Exception) -> Response:
    return _console(request).page(request, "message", "Cluster unreachable", 503, error=str(exc))


async def _console_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, BadInput):
        status, title = 400, "Bad request"
    elif isinstance(exc, NotFoundError):
        status, title = 404, "Not found"
    else:
        status, title = 502, "Cluster error"
    return _console(request).page(request, "message", title, status, error=str(exc))


def create_app(
    bootstrap: str,
    pipeline_urls: Sequence[str] = (),
    *,
    timeout_s: float = 15.0,
    sample_interval_s: float = 2.0,
    properties: Sequence[str] = (),
    query_names: Mapping[str, str] | None = None,
) -> Starlette:
    """The console for the cluster at ``bootstrap`` (see module doc); ``properties`` are
    librdkafka ``KEY=VALUE`` client settings (:class:`~riverbed.console.cluster.Cluster`);
    ``query_names`` maps a pipeline endpoint's ``query`` label (a query id when the query
    has no name) to the name the connectors page shows (read at each request: the caller
    may fill it after the queries started)."""
    console = Console(
        bootstrap,
        pipeline_urls,
        timeout_s=timeout_s,
        sample_interval_s=sample_interval_s,
        properties=properties,
        query_names=query_names,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        sampler = asyncio.create_task(console.sample_forever())
        try:
            yield
        finally:
            sampler.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sampler
            console.pool.shutdown(wait=False, cancel_futures=True)

    app = Starlette(
        routes=[
            Route("/", home),
            Route("/healthz", healthz),
            Route("/topics", topics_page),
            Route("/topics/{topic:path}/messages", messages_page),
            Route("/topics/{topic:path}", topic_page),
            Route("/groups", groups_page),
            Route("/groups/{group:path}", group_page),
            Route("/share-groups", share_groups_page),
            Route("/transactions", transactions_page),
            Route("/transactions/{transactional_id:path}", transaction_page),
            Route("/throughput", throughput_page),
            Route("/connectors", connectors_page),
        ],
        exception_handlers={
            BrokerUnreachableError: _unreachable,
            ConsoleError: _console_error,
        },
        lifespan=lifespan,
    )
    app.state.console = console
    return app
