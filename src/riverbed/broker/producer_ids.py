"""Producer id allocation for idempotent producers (InitProducerId).

Ids come from a counter persisted in ``<data_dir>/producer_ids.json`` as
``{"next_block_start": N}``.  Like Kafka's ProducerIdManager, ids are reserved in blocks:
before handing out the first id of a block the new block end is written (atomically,
fsynced), so an id is never handed out twice, even across a crash — a crash merely skips
the rest of the block.  Epochs: a fresh id starts at epoch 0; a producer that presents
its id and epoch (KIP-360) gets the epoch bumped, or a new id when the epoch would
overflow int16.  Sequence numbers are checked by the storage layer, not here.

Not thread-safe: the broker calls it from its event loop thread only.
"""

from __future__ import annotations

from pathlib import Path

from riverbed.broker.state_file import read_json, write_json_atomic

PRODUCER_IDS_FILE = "producer_ids.json"
BLOCK_SIZE = 1000
MAX_EPOCH = 32_767


class ProducerIdManager:
    """Hands out unique producer ids from a crash-safe persisted counter."""

    def __init__(self, data_dir: Path, *, block_size: int = BLOCK_SIZE) -> None:
        self._path = data_dir / PRODUCER_IDS_FILE
        self._block_size = block_size
        state = read_json(self._path)
        start = int(state["next_block_start"]) if isinstance(state, dict) else 0
        self._next = start
        self._block_end = start  # nothing reserved yet in this process

    def next_producer_id(self) -> int:
        """A producer id never returned before by this data dir."""
        if self._next >= self._block_end:
            self._block_end = self._next + self._block_size
            write_json_atomic(self._path, {"next_block_start": self._block_end})
        pid = self._next
        self._next += 1
        return pid

    def init_producer(self, producer_id: int, producer_epoch: int) -> tuple[int, int]:
        """(id, epoch) for an InitProducerId request without a transactional id."""
        if 0 <= producer_id < self._next and 0 <= producer_epoch < MAX_EPOCH - 1:
            return producer_id, producer_epoch + 1
        return self.next_producer_id(), 0
