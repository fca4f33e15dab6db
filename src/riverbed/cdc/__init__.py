"""Change data capture: database writes as Debezium-compatible change events in Kafka topics.

Shared core (used by every connector)::

    envelope   ChangeEvent, Source, Field, TableSchema -> key/value JSON (records_for)
    sink       ChangeSink: idempotent acks=all producer, compacted topic creation,
               in-order acknowledged position
    position   OffsetStore: the connector's position in ``<prefix>.cdc-offsets``
    runner     run(connector): foreground loop until SIGTERM, Connector protocol

Connectors: ``riverbed.cdc.sqlite`` (triggers into a change table), ``riverbed.cdc.postgres``
(pgoutput logical decoding).  This package reaches the broker only through a Kafka client
(confluent-kafka), never through ``riverbed.broker`` or ``riverbed.storage``, so it works
against any Kafka cluster.  The contract is described in docs/cdc.md.
"""
