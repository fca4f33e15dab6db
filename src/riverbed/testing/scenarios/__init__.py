"""Client-compatibility scenarios: real Kafka clients against any Kafka-protocol server.

One module per client, each with the same functions where the client can do it::

    roundtrip(bootstrap, topic, codec, records) -> RoundTrip
    offsets_for_times(bootstrap, topic, partition, timestamps) -> {timestamp: offset | None}
    consume_out_of_range(bootstrap, topic, partition, offset) -> error name

    confluent     confluent-kafka 2.16 (librdkafka 2.16)
    kafka_python  kafka-python 3.0.12
    aio           aiokafka 0.14
    kcat          kcat 1.7.1 / librdkafka 2.0.2 (no timestamps, per-run headers)
    java          JavaClient.build(source).roundtrip(...)  (kafka-clients, javac-compiled)
    admin         *_admin_lifecycle(bootstrap, topic) -> {step: observation}; create_topic
    raw           produce_error / fetch_error / fetch_codecs: bad requests clients won't send
    compare       normalise, diff, compare(scenario, bootstrap_a, bootstrap_b)

Client libraries are imported inside the functions, so importing this package needs none
of them.  Every function opens and closes its own clients; none is thread-safe to share.
"""

from riverbed.testing.scenarios.records import (
    CODECS,
    ConsumedRecord,
    Record,
    RoundTrip,
    expected_consumed,
    make_records,
)

__all__ = ["CODECS", "ConsumedRecord", "Record", "RoundTrip", "expected_consumed", "make_records"]
