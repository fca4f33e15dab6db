"""The Kafka-protocol broker: an asyncio server over the storage layer.

Layout: :mod:`.server` (life cycle, wiring), :mod:`.connection` (framing, pipelining),
:mod:`.handlers` (one adapter per API), :mod:`.topics` (topic metadata),
:mod:`.topic_configs` (describe/validate configs), :mod:`.purgatory` (long-poll fetches),
:mod:`.producer_ids`, :mod:`.cluster`, :mod:`.state_file`, :mod:`.request_decoding`.
"""
