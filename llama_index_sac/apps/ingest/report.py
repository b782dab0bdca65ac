"""What one ``llama-sac ingest`` run did (:class:`IngestReport`): the documents new, changed, unchanged, removed,
written again or taken out of the record, the files skipped and why, the chunks written; its final line."""

from __future__ import annotations

from dataclasses import dataclass, field

from llama_index_sac.apps._display import counted

__all__ = ["IngestReport"]


@dataclass
class IngestReport:
    """What one :func:`ingest` run did (documents: one per readable file; chunks: rows written to the store)."""

    store: str
    collection: str
    engine: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_written: int = 0  # chunks embedded and written this run
    summaries: int = 0  # summaries computed this run (the summarizer's calls)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it could not be read (not ingested)
    failed: dict[str, str] = field(default_factory=dict)  # document id -> why its summary failed (not written)
    empty: list[str] = field(default_factory=list)  # documents written this run that gave no chunk (no text)
    redone: list[str] = field(default_factory=list)  # documents written again: interrupted, or rows missing
    missing: list[str] = field(default_factory=list)  # paths given that no longer exist (their documents kept)
    unrecorded: list[str] = field(default_factory=list)  # documents not read this run whose rows the store lacked
    seconds: float = 0.0

    def line(self) -> str:
        """The final line of ``llama-sac ingest``."""
        extra = "".join(f", {n} {what}" for n, what in (
            (len(self.redone), "written again (interrupted, or rows missing)"),
            (len(self.unrecorded), "taken out of the record (rows missing, file not ingested this run)"),
            (len(self.missing), "missing path(s)"), (len(self.skipped), "unreadable file(s) skipped"),
            (len(self.failed), "summary failure(s)")) if n)
        return (f"{self.store} (collection {self.collection}, engine {self.engine}): documents {self.new} new, "
                f"{self.changed} changed, {self.unchanged} unchanged, {self.removed} removed{extra}; "
                f"{counted(self.chunks_written, 'chunk')} written in {self.seconds:.1f} s")
