"""Queues on Kafka share groups (KIP-932): a RabbitMQ-style worker API.

Works against any Kafka cluster with share groups (Apache Kafka 4.2+, Riverbed)::

    from riverbed.queue import Delivery, QueueWorkers, WorkerSettings

    def handle(delivery: Delivery) -> None:
        print(delivery.value, delivery.delivery_count)   # raise to retry

    settings = WorkerSettings("127.0.0.1:9092", "jobs", ("orders",), concurrency=4)
    QueueWorkers(settings, handle).run()                  # until SIGTERM

:class:`QueueWorkerProcesses` runs the workers as child processes instead of threads (for
CPU-bound handlers; the handler must then be a picklable, module-level function).
See :mod:`riverbed.queue.worker` for the guarantees and docs/queues.md for the guide.
"""

from riverbed.queue.delivery import Delivery, Outcome, QueueError, RejectDelivery
from riverbed.queue.processes import QueueWorkerProcesses
from riverbed.queue.worker import (
    Handler,
    OutcomeCallback,
    QueueStats,
    QueueWorkers,
    WorkerSettings,
)

__all__ = [
    "Delivery",
    "Handler",
    "Outcome",
    "OutcomeCallback",
    "QueueError",
    "QueueStats",
    "QueueWorkerProcesses",
    "QueueWorkers",
    "RejectDelivery",
    "WorkerSettings",
]
