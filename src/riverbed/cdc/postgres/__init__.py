"""PostgreSQL change data capture: a consistent snapshot, then pgoutput logical decoding
through a replication slot and a publication (``riverbed cdc postgres``).

::

    catalog     connect, check the source (wal_level, REPLICATION, keys, slot plugin)
    pgoutput    decoder of pgoutput messages (no I/O)
    values      PostgreSQL text values -> JSON, after Debezium's converter defaults
    connector   PostgresConnector: slot + snapshot, streaming, acknowledged LSN
    incremental incremental snapshots while streaming (DBLog watermarks, signal table)

The driver is psycopg2 (``psycopg2-binary``): psycopg 3 does not speak the streaming
replication protocol.
"""

from riverbed.cdc.postgres.connector import PostgresConfig, PostgresConnector

__all__ = ["PostgresConfig", "PostgresConnector"]
