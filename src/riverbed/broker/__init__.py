"""The Kafka-protocol broker: an asyncio server over the storage layer.

Layout: :mod:`.server` (life cycle, wiring), :mod:`.connection` (framing, pipelining),
:mod:`.context` (what a handler knows of its request's connection), :mod:`.handlers` (one
adapter per API, each taking the narrow services of :mod:`.handlers.deps`),
:mod:`.topics` (topic metadata), :mod:`.topic_configs` (describe/validate configs),
:mod:`.purgatory` (long-poll fetches),
:mod:`.producer_ids`, :mod:`.cluster`, :mod:`.state_file`, :mod:`.request_decoding`,
:mod:`.quotas` and :mod:`.quota_store` (client byte-rate quotas; Produce/Fetch throttled by
:mod:`.handlers.throttling`, connections muted by :mod:`.connection`).
"""
