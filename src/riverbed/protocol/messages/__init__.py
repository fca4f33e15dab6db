"""The Kafka message classes, generated from Kafka 4.4's JSON schemas (see ``generated/``).

``from riverbed.protocol.messages import ProduceRequest`` and friends; every class is
listed in :data:`ALL_MESSAGES`.  The formats Kafka writes into its internal topics and
files (``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``, producer
snapshots) are in :mod:`riverbed.protocol.messages.generated_records`, framed as Kafka
frames them by :mod:`riverbed.protocol.messages.coordinator_serde`.  Regenerate both with
``python -m riverbed.protocol.codegen``.
"""

from riverbed.protocol.messages.generated import *  # noqa: F403
from riverbed.protocol.messages.generated import __all__ as __all__
