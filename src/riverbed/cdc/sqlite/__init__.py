"""SQLite change data capture: triggers into a change table, tailed into Kafka topics.

:class:`~riverbed.cdc.sqlite.connector.SqliteConnector` is the connector;
:mod:`riverbed.cdc.sqlite.triggers` the objects it installs in the database.
"""

from riverbed.cdc.sqlite.connector import SqliteConnector

__all__ = ["SqliteConnector"]
