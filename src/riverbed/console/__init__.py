"""The Riverbed web console: server-rendered pages about any Kafka cluster.

``riverbed console --bootstrap-server HOST:PORT --listen HOST:PORT`` (docs/console.md).
Starlette + Jinja2, served by uvicorn; every cluster call goes through Kafka clients on a
thread pool (:mod:`riverbed.console.cluster`), so it works against Apache Kafka as well as
Riverbed.
"""

from riverbed.console.app import create_app
from riverbed.console.server import ConsoleServer, serve

__all__ = ["ConsoleServer", "create_app", "serve"]
