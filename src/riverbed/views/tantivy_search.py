"""The optional search-index view on tantivy (``pip install 'riverbed[tantivy]'``).

Layout (one tantivy index directory)::

    key   text, raw tokenizer, stored      the view key (one document per key)
    doc   bytes, stored                    the row as canonical JSON
    body  text, default tokenizer          the row's strings and numbers, space-joined

plus one document whose key is ``\\x00offsets`` and whose ``doc`` is the high-water
offsets as JSON (``{"<topic>/<partition>": offset}``).  :meth:`TantivySearchView.apply`
deletes by key term and adds documents, the offsets document included, then commits
once: tantivy publishes a commit atomically (its ``meta.json``), so a SIGKILL leaves
the previous commit or this one.  The writer holds the index's lock for the view's life
(one writing process).  Not thread-safe.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import tantivy

from riverbed.views.change import Change, ViewError, newest_per_key
from riverbed.views.search import searchable_text

OFFSETS_KEY = "\x00offsets"


class TantivySearchView:
    """A full-text index of the latest row per key in tantivy (see the module docstring)."""

    def __init__(self, path: str | Path) -> None:
        Path(path).mkdir(parents=True, exist_ok=True)
        builder = tantivy.SchemaBuilder()
        builder.add_text_field("key", stored=True, tokenizer_name="raw")
        builder.add_bytes_field("doc", stored=True)
        builder.add_text_field("body", stored=False)
        self._schema = builder.build()
        try:
            self._index = tantivy.Index(self._schema, path=str(path), reuse=True)
            self._writer = self._index.writer(heap_size=15_000_000, num_threads=1)
        except ValueError as exc:
            raise ViewError(f"tantivy view {path}: {exc}") from None

    def _docs(self, query: Any, limit: int) -> list[Any]:
        self._index.reload()
        searcher = self._index.searcher()
        hits = searcher.search(query, limit).hits
        return [searcher.doc(address) for _score, address in hits]

    def high_water_offsets(self) -> dict[tuple[str, int], int]:
        found = self._docs(tantivy.Query.term_query(self._schema, "key", OFFSETS_KEY), 1)
        if not found:
            return {}
        marks: dict[str, int] = json.loads(bytes(found[0].get_first("doc")))
        out: dict[tuple[str, int], int] = {}
        for name, offset in marks.items():
            topic, _, partition = name.rpartition("/")
            out[(topic, int(partition))] = offset
        return out

    def apply(self, changes: list[Change]) -> int:
        latest, marks = newest_per_key(changes, self.high_water_offsets())
        if not latest:
            return 0
        writer = self._writer
        try:
            for key, change in latest.items():
                writer.delete_documents_by_term("key", key)
                if change.row is not None:
                    doc = json.dumps(change.row, sort_keys=True, separators=(",", ":"))
                    writer.add_document(
                        tantivy.Document(
                            key=key, doc=doc.encode(), body=searchable_text(change.row)
                        )
                    )
            writer.delete_documents_by_term("key", OFFSETS_KEY)
            offsets = json.dumps({f"{t}/{p}": o for (t, p), o in marks.items()})
            writer.add_document(tantivy.Document(key=OFFSETS_KEY, doc=offsets.encode()))
            writer.commit()
        except BaseException:
            writer.rollback()
            raise
        return len(latest)

    def search(self, query: str, limit: int = 20) -> list[str]:
        """Keys whose row matches tantivy's query syntax on the row's text, best first."""
        try:
            parsed = self._index.parse_query(query, ["body"])
        except ValueError as exc:
            raise ViewError(f"search {query!r}: {exc}") from None
        return [str(d.get_first("key")) for d in self._docs(parsed, limit)]

    def snapshot(self) -> dict[str, dict[str, Any]]:
        self._index.reload()
        total = self._index.searcher().num_docs
        docs = self._docs(tantivy.Query.all_query(), max(total, 1))
        out = {
            str(d.get_first("key")): json.loads(bytes(d.get_first("doc")))
            for d in docs
            if d.get_first("key") != OFFSETS_KEY
        }
        return dict(sorted(out.items()))

    def close(self) -> None:
        self._writer.wait_merging_threads()
