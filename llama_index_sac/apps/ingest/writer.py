"""The store side of one ``llama-sac ingest`` run: the store opened, each document written and committed on its own.

:func:`open_writer` starts (or joins) Ray for the Ray engine, locks the ingest record, opens the store, repairs what an
interrupted run was writing (the journal replayed: :mod:`~llama_index_sac.apps.ingest.journal`), checks the record
against the rows the store holds (:func:`~llama_index_sac.apps.ingest.store.check_rows`) and records the run's
settings. :class:`StoreWriter` then takes the rounds of documents :func:`~llama_index_sac.apps.ingest.run.ingest`
reads: each new or changed document is transformed (parsed, summarized, embedded: locally in groups of about
:data:`GROUP_CHARS` characters, or streamed back from Ray) and committed on its own, its rows written, then the journal
records it, so that an interrupted or killed run loses only the documents in flight. It also takes out of the store
and the record the documents whose files vanished and those the store lacks that this run did not read.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import run_transformations
from llama_index.core.schema import BaseNode, Document, TransformComponent
from llama_index.core.storage.docstore import SimpleDocumentStore
from llama_index.core.vector_stores.types import BasePydanticVectorStore
from tqdm.auto import tqdm

from llama_index_sac.apps.ingest.files import IngestError, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.generation import bumped_when_written
from llama_index_sac.apps.ingest.identity import Folder, in_scope
from llama_index_sac.apps.ingest.journal import Journal, replay
from llama_index_sac.apps.ingest.report import IngestReport
from llama_index_sac.apps.ingest.steps import IngestSettings, build_steps, embed_steps
from llama_index_sac.apps.ingest.store import RowCheck, check_rows, open_store, store_errors
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.ingestion.pipeline import failed_documents
from llama_index_sac.settings import model_backend

__all__ = ["GROUP_CHARS", "StoreWriter", "open_writer"]

#: Characters of text transformed together by the local engine before their documents are committed: enough chunks
#: for full embedding batches, few enough that an interrupt loses little.
GROUP_CHARS = 16_000


def open_writer(stack: ExitStack, spec: StoreSpec, record: IngestRecord, settings: IngestSettings,
                steps: list[TransformComponent], embed: BaseEmbedding, injected: BaseEmbedding | None, cache_dir: str,
                current: dict[str, Any], report: IngestReport, say: Callable[[str], None]) -> StoreWriter:
    """Start (or join) Ray for the Ray engine, open the store, repair the documents an interrupted run was writing,
    check the record against the store, record the settings; the writer of this run."""
    transform: Any = [*steps, embed]
    if settings.engine == "ray":
        from llama_index_sac.apps.ingest.ray_engine import RayStages, ray_session

        try:
            resources = stack.enter_context(ray_session())
        except Exception as exc:  # noqa: BLE001 - a cluster that cannot be started or joined
            where = os.environ.get("RAY_ADDRESS") or "a local cluster"
            raise IngestError(f"cannot start or join Ray ({where}): {type(exc).__name__}: {exc}") from None
        transform = RayStages(
            parse_and_summarize=partial(build_steps, settings, injected, cache_dir),
            embed=partial(embed_steps, settings, injected),
            workers=settings.workers or max(1, int(resources.get("CPU", 1))),
            show_progress=settings.show_progress,
            embed_gpus=settings.embed_gpus(),
        )
    stack.enter_context(record.lock())
    errors, is_open = store_errors(spec.kind), [False]

    def finished_are_kept(kind: Any, exc: BaseException | None, trace: Any) -> bool:
        """A Chroma server that fails in the middle of the run (open_store's error, raised as the stack unwinds):
        say that what was committed stays."""
        if is_open[0] and spec.url and isinstance(exc, IngestError) and isinstance(exc.__cause__, errors):
            raise IngestError(f"{exc} The documents committed before it are kept: run the same ingest again to "
                              "write the rest") from exc.__cause__
        return False

    stack.push(finished_are_kept)
    stack.enter_context(bumped_when_written(record))  # at the end, still locked: a running serve reopens
    opened = stack.enter_context(open_store(spec, settings.collection, create=True))
    is_open[0] = True
    if opened.unverified:
        say(opened.unverified)
    if not record.exists() and opened.rows:
        raise IngestError(f"collection {settings.collection!r} of {spec} holds {opened.rows} rows that llama-sac "
                          f"ingest did not write (no {record.directory}): use another --collection or --vector-store")
    docstore, counts, journal = record.load_docstore(), record.rows(), Journal(record)
    interrupted = replay(journal.entries(), docstore, counts)
    for doc_id in record.pending():  # an older record: rows of new documents of a round that did not finish
        if docstore.get_document_hash(doc_id) is None:
            opened.vector_store.delete(doc_id)
    writer = StoreWriter(opened.vector_store, docstore, transform, steps[-1], record, journal, report, settings,
                         say, counts, RowCheck(), store_errors(spec.kind))
    for doc_id in interrupted:
        writer.forget(doc_id, delete_rows=True)
    if interrupted:
        report.redone += interrupted
        say(f"{len(interrupted)} document(s) were being written when the last run stopped: their rows are deleted "
            f"and they are written again: {', '.join(interrupted[:5])}{' ...' if len(interrupted) > 5 else ''}")
    writer.fold()
    listed = sorted(set(docstore.get_all_document_hashes().values()))
    writer.check = check_rows(spec, opened, listed, counts) if record.exists() else RowCheck()
    if writer.check.warning:
        say(writer.check.warning)
    record.write_settings({"settings": current, "embed_model_name": settings.embed_model, "store": spec.kind,
                           "embed_backend": model_backend(embed),
                           "embed_precision": current["embed_model"]["precision"]})
    record.save_rows({doc_id: counts[doc_id] for doc_id in listed if doc_id in counts})
    return writer


def _groups(documents: list[Document]) -> Iterator[list[Document]]:
    """Consecutive documents of about :data:`GROUP_CHARS` characters (at least one document per group)."""
    group: list[Document] = []
    size = 0
    for document in documents:
        group.append(document)
        size += len(document.text)
        if size >= GROUP_CHARS:
            yield group
            group, size = [], 0
    if group:
        yield group


@dataclass
class StoreWriter:
    """One ``ingest`` run with its store open: the rounds, each document committed on its own, and the removal of
    vanished files (module docstring)."""

    vector_store: BasePydanticVectorStore
    docstore: SimpleDocumentStore
    transform: Any  # local: [parser, augmentation, embedding model]; ray: RayStages
    augmentation: TransformComponent
    record: IngestRecord
    journal: Journal
    report: IngestReport
    settings: IngestSettings
    say: Callable[[str], None]
    counts: dict[str, int]  # rows per document, as the record says (rows.json + journal)
    check: RowCheck
    store_errors: tuple[type[BaseException], ...]

    def round(self, documents: list[Document]) -> None:
        """One round: rewrite what the store lacks, classify by the docstore, transform and commit each document
        new or changed, fold the journal into the record."""
        report = self.report
        for doc_id in [d.id_ for d in documents if d.id_ in self.check.repair]:  # the record said more than the store
            self.forget(doc_id, delete_rows=bool(self.check.store_rows.get(doc_id)))
            self.check.repair.discard(doc_id)
            if doc_id not in report.redone:
                report.redone.append(doc_id)
        hashes = {d.id_: self.docstore.get_document_hash(d.id_) for d in documents}
        todo = [d for d in documents if hashes[d.id_] != d.hash]
        new = sum(1 for d in todo if hashes[d.id_] is None)
        report.new += new
        report.changed += len(todo) - new
        report.unchanged += len(documents) - len(todo)
        augmentation = self.augmentation
        assert isinstance(augmentation, SummaryAugmentationTransformation)
        calls = augmentation.summarizer_calls  # in this process (the local engine)
        summarized: set[str] = set()
        with tqdm(total=len(todo), desc="Parsing, summarizing, embedding", unit="doc",
                  disable=not self.settings.show_progress) as bar:
            try:
                for document, nodes in self._transformed(todo):
                    self._commit(document, nodes, replace=hashes[document.id_] is not None)
                    summarized.update(n.ref_doc_id or "" for n in nodes if "summary_strategy" in n.metadata)
                    bar.update()
            except Exception as exc:
                if self.settings.engine != "ray" or isinstance(exc, self.store_errors):
                    raise
                from llama_index_sac.apps.ingest.ray_engine import ray_error_message

                raise IngestError(f"the Ray engine failed: {ray_error_message(exc)} (finished documents are kept; "
                                  "the next run does the rest)") from exc
        if self.settings.engine == "local":
            report.summaries += augmentation.summarizer_calls - calls
        else:  # Ray: every document run was summarized once, in a worker
            report.summaries += len(summarized)
        self.fold()

    def _transformed(self, todo: list[Document]) -> Iterator[tuple[Document, list[BaseNode]]]:
        """Each document of ``todo`` with its embedded chunks, as soon as they are ready (local: a group at a time,
        in order; Ray: in the order they finish, documents without chunks last)."""
        if self.settings.engine == "ray":
            finished: set[int] = set()
            for index, nodes in self.transform.stream(todo, show_progress=self.settings.show_progress):
                finished.add(index)
                yield todo[index], nodes
            yield from ((d, []) for i, d in enumerate(todo) if i not in finished)
            return
        for group in _groups(todo):
            by_document: dict[str, list[BaseNode]] = defaultdict(list)
            for node in run_transformations(group, self.transform, in_place=False):
                by_document[node.ref_doc_id or node.node_id].append(node)
            for document in group:
                yield document, by_document.get(document.id_, [])

    def _commit(self, document: Document, nodes: list[BaseNode], *, replace: bool) -> None:
        """Write one document's rows (replacing its old ones) and record it; a failed summary writes nothing and
        leaves it unrecorded, so the next run retries it (never a chunk embedded without its summary)."""
        doc_id, report = document.id_, self.report
        self.journal.append(write=doc_id)
        if replace:
            self.vector_store.delete(doc_id)
        failed = failed_documents(nodes)
        if failed:
            self.docstore.delete_document(doc_id, raise_error=False)
            self.counts.pop(doc_id, None)
            self.journal.append(forget=doc_id)
            report.failed[doc_id] = failed[doc_id]
            self.say(f"no summary for {doc_id}: {failed[doc_id]} (not written; the next run retries it)")
            return
        embedded = [node for node in nodes if node.embedding is not None]
        if embedded:
            self.vector_store.add(embedded)
        self.journal.append(done=doc_id, hash=document.hash, rows=len(embedded))
        self.docstore.set_document_hash(doc_id, document.hash)
        self.counts[doc_id] = len(embedded)
        report.chunks_written += len(embedded)
        if not embedded:
            report.empty.append(doc_id)

    def forget(self, doc_id: str, *, delete_rows: bool) -> None:
        """Take ``doc_id`` out of the docstore and the row counts (and, with ``delete_rows``, its rows out of the
        store), journaled, so the next round writes it as new."""
        self.journal.append(write=doc_id)
        if delete_rows:
            self.vector_store.delete(doc_id)
        self.docstore.delete_document(doc_id, raise_error=False)
        self.docstore.delete_ref_doc(doc_id, raise_error=False)
        self.counts.pop(doc_id, None)
        self.journal.append(forget=doc_id)

    def fold(self) -> None:
        """Write the record (``rows.json``, ``docstore.json``) and empty the journal it now holds."""
        self.record.save_rows(self.counts)
        self.record.save_docstore(self.docstore)
        self.journal.clear()
        self.record.clear_pending()

    def unrecord_unseen(self, seen: set[str]) -> None:
        """Take the documents whose rows the store lacks (:attr:`check`) that this run did not read out of the
        record (rows deleted), so that the run that reads their file writes them as new; said in one line."""
        left = sorted(d for d in self.check.repair if d not in seen and self.docstore.get_document_hash(d) is not None)
        for doc_id in left:
            self.forget(doc_id, delete_rows=bool(self.check.store_rows.get(doc_id)))
        if left:
            self.fold()
            self.report.unrecorded += left
            self.say(f"{len(left)} document(s) not read by this run lacked their rows in the store: taken out of the "
                     f"record (ingested again with their files): {', '.join(left[:5])}{' ...' * (len(left) > 5)}")

    def remove_vanished(self, folders: dict[str, Folder], walked: Sequence[Path], seen: set[str],
                        forget: set[str]) -> None:
        """Delete the documents of the folders walked whose files no longer exist (rows and docstore entries), and
        the documents of an older record (absolute paths as ids) in them, which this run ingested under their ids, and
        those of ``forget`` (a broken link, a link not followed, a file that vanished)."""
        gone = sorted(doc_id for doc_id in set(self.docstore.get_all_document_hashes().values())
                      if doc_id not in seen and (doc_id in forget or (
                          (path := in_scope(doc_id, folders, walked)) is not None
                          and (os.path.isabs(doc_id) or not os.path.exists(path) or os.path.isdir(path)))))
        for doc_id in gone:
            self.forget(doc_id, delete_rows=True)
        self.report.removed += len(gone)
        if gone:
            self.fold()
