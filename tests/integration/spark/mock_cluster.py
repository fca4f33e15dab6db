"""librdkafka's in-process mock Kafka cluster, driven through ctypes.

confluent-kafka does not wrap librdkafka's ``rd_kafka_mock_*`` API, but its wheel ships
the library; we load the same shared object and create a cluster with exact topic
partition counts.  The cluster speaks the Kafka protocol on 127.0.0.1, so Spark's Python
workers (other processes) reach it like any broker.  It lives as long as this object.

Limits of the mock that matter here: no CreatePartitions, no CreateTopics through the
admin API, and ListOffsets by timestamp answers -1 (no offset) -- tests of those
features need a real broker.
"""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka


class MockCluster:
    """One mock cluster of ``brokers`` brokers; ``bootstrap_servers`` for any client."""

    def __init__(self, brokers: int = 1) -> None:
        libs = os.path.join(os.path.dirname(confluent_kafka.__file__), "..", "confluent_kafka.libs")
        lib = ctypes.CDLL(sorted(glob.glob(os.path.join(libs, "librdkafka*.so*")))[0])
        lib.rd_kafka_conf_new.restype = ctypes.c_void_p
        lib.rd_kafka_conf_set.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.rd_kafka_new.restype = ctypes.c_void_p
        lib.rd_kafka_new.argtypes = [
            ctypes.c_int,
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_size_t,
        ]
        lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
        lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
        lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
        lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_mock_topic_create.argtypes = [
            ctypes.c_void_p,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_int,
        ]
        lib.rd_kafka_mock_cluster_destroy.argtypes = [ctypes.c_void_p]
        lib.rd_kafka_destroy.argtypes = [ctypes.c_void_p]
        errstr = ctypes.create_string_buffer(512)
        conf = lib.rd_kafka_conf_new()
        lib.rd_kafka_conf_set(conf, b"log_level", b"0", errstr, 512)
        self._lib = lib
        self._rk = lib.rd_kafka_new(0, conf, errstr, 512)
        if not self._rk:
            raise RuntimeError(errstr.value.decode())
        self._cluster = lib.rd_kafka_mock_cluster_new(self._rk, brokers)
        self.bootstrap_servers: str = lib.rd_kafka_mock_cluster_bootstraps(self._cluster).decode()

    def create_topic(self, name: str, partitions: int) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._cluster, name.encode(), partitions, 1)
        if err:
            raise RuntimeError(f"mock topic_create({name}) failed: error {err}")

    def close(self) -> None:
        self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
        self._lib.rd_kafka_destroy(self._rk)
