"""The Kafka message classes, generated from the JSON schemas (see ``generated/``).

``from riverbed.protocol.messages import ProduceRequest`` and friends; every class is
listed in :data:`ALL_MESSAGES`.  Regenerate with ``python -m riverbed.protocol.codegen``.
"""

from riverbed.protocol.messages.generated import *  # noqa: F403
from riverbed.protocol.messages.generated import __all__ as __all__
