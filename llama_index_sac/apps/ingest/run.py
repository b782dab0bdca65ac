"""``llama-sac ingest`` and ``llama-sac query``: a user's own folders of contracts into a real vector store, and back.

:func:`ingest` reads files (``.txt``/``.md`` as strict UTF-8; ``.pdf``/``.docx`` page by page; regular files only,
within ``max_file_bytes``/``max_pages``: :mod:`~llama_index_sac.apps.ingest.readers`), one LlamaIndex ``Document`` per
file whose id is its folder's label and its path inside the folder (:mod:`~llama_index_sac.apps.ingest.identity`: stable
when the folder is moved, renamed or reached through a link), parses it, numbers its chunks' pages, writes one summary
per whole document (``SummaryAugmentationTransformation``), embeds every chunk with its summary and writes the rows into
Chroma or Qdrant, with a docstore of document hashes beside the store. A second run processes only new and changed files
(the changed ones' rows are replaced), leaves every other row untouched, and removes the rows of files that disappeared
from the folders given (LlamaIndex's ``DocstoreStrategy.UPSERTS_AND_DELETE``, limited to those folders).

Each document is committed on its own as soon as its chunks are embedded: its rows are written, then the journal
records it (:mod:`~llama_index_sac.apps.ingest.journal`), so an interrupted or killed run loses only the documents in
flight, and a document whose rows were being replaced when the run stopped is written again by the next run instead
of being trusted. Files are read in rounds of ``batch_documents`` (memory stays bounded by a round).
``engine="ray"`` runs the transformations on Ray Data (:mod:`~llama_index_sac.apps.ingest.ray_engine`), streaming each
document back as soon as it is embedded, with the same rows. File metadata is the stable part of LlamaIndex's default
(``file_path``: the document id, ``file_name``, ``file_type``, ``file_size``): dates and the absolute path are left
out because the docstore hashes metadata too, and a touch or a move would make every file "changed".

The ingest record beside the store is a cache of what the store holds: each run first checks that the store holds the
rows the record lists (:func:`~llama_index_sac.apps.ingest.store.check_rows`) and writes again the documents it
lacks (those whose files it does not read are taken out of the record, so that it vouches only for rows the store
holds). :func:`query` (:mod:`~llama_index_sac.apps.ingest.query`) retrieves the top-k chunks of a question. The CLI
commands are in :mod:`~llama_index_sac.apps.ingest.commands`, ``ls`` and ``rm`` in
:mod:`~llama_index_sac.apps.ingest.manage`; the user guide is ``docs/ingest.md``.
"""

from __future__ import annotations

import os
import sys
import time
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

from llama_index_sac._util import require_extra
from llama_index_sac.apps.ingest.document_index import save_document_index
from llama_index_sac.apps.ingest.files import (
    SUFFIXES,
    IngestError,
    IngestRecord,
    StoreSpec,
    Unreadable,
    read_file,
    why_unreadable,
)
from llama_index_sac.apps.ingest.generation import bumped_when_written
from llama_index_sac.apps.ingest.identity import Folder, in_scope, load_folders, plan_sources, save_folders
from llama_index_sac.apps.ingest.journal import Journal, replay
from llama_index_sac.apps.ingest.query import QueryHit, load_model, query
from llama_index_sac.apps.ingest.readers import shown
from llama_index_sac.apps.ingest.report import IngestReport
from llama_index_sac.apps.ingest.steps import (
    IngestSettings,
    build_steps,
    comparable,
    differences,
    embed_steps,
    fingerprint,
)
from llama_index_sac.apps.ingest.store import RowCheck, check_rows, check_store_folder, open_store, store_errors
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.ingestion.pipeline import failed_documents
from llama_index_sac.settings import model_backend

__all__ = ["IngestError", "IngestReport", "IngestSettings", "QueryHit", "StoreSpec", "ingest", "query"]

#: Characters of text transformed together by the local engine before their documents are committed: enough chunks
#: for full embedding batches, few enough that an interrupt loses little.
GROUP_CHARS = 16_000


# -- ingestion -------------------------------------------------------------------------------------------------------
def ingest(paths: Sequence[str | os.PathLike[str]], store: StoreSpec | str, settings: IngestSettings | None = None,
           *, labels: Sequence[str] | None = None, embed_model: BaseEmbedding | None = None,
           log: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest the files of ``paths`` into ``store`` (module docstring); returns what was done. One document per file.

    The ingest record is checked against the store first: documents whose rows the store does not hold as recorded
    (a store copied, damaged or replaced under the record), and documents a previous run was writing when it
    stopped, are written again, and ``log`` says so in one line.

    Args:
        paths: folders (walked recursively) and files. A path that does not exist is reported and its documents are
            kept (unless no path exists: then nothing is done).
        store: ``"chroma:DIR"``, ``"qdrant:DIR"`` or a :class:`StoreSpec`.
        settings: the options (default :class:`IngestSettings()`).
        labels: the folder label of each path (``--as``; default: see :mod:`~llama_index_sac.apps.ingest.identity`).
        embed_model: an embedding model to use instead of ``settings.embed_model`` (with ``engine="ray"`` it is
            pickled to the workers: it must be rebuilt correctly from its fields).
        log: receives one line per unreadable file, missing path and failed summary, one for the files that gave no
            chunk (empty), one per moved folder label, one when documents are written again, one when documents
            carry none of the summarizer's ``metadata_keys`` (their summaries are content-only) and one when a Chroma
            store's vector index cannot be verified against its recorded checksums (none recorded yet, or the last
            run stopped before it recorded them: this run records them).

    Raises:
        IngestError: no path exists, no file to ingest, nothing readable (the store is then not opened), a folder
            label already naming another folder, a folder holding the other kind of store (or whose record names
            it), a damaged store (a Chroma vector index that differs from its recorded checksums included), a store
            that cannot be opened, read or written, a bad collection, settings other than the
            collection's (the differences are named), an embedding model or LLM that cannot be set up, or a failure
            inside Ray.
        ImportError: an extra is missing (``vectorstores``, ``ray``).
    """
    started = time.perf_counter()
    settings = settings or IngestSettings()
    spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
    if spec.path.exists() and not spec.path.is_dir():
        raise IngestError(f"--vector-store: {spec.path} is not a directory")
    if settings.engine == "ray":
        try:
            require_extra("ray.data", "ray", "--engine ray")
        except ImportError as exc:
            raise IngestError(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - a broken installation: importing Ray raises anything
            line = (str(exc).strip().splitlines() or [""])[0]
            raise IngestError(f"--engine ray: importing Ray failed ({type(exc).__name__}: {line}); repair or "
                              "reinstall it (pip install 'llama-index-sac[ray]')") from None
        address = os.environ.get("RAY_ADDRESS")
        ray_module = sys.modules.get("ray")
        if address and not (ray_module is not None and ray_module.is_initialized()):
            from llama_index_sac.apps.ingest.ray_engine import check_ray_address

            try:  # before the model loads: an address where no cluster answers fails within the connect timeout
                check_ray_address(address)
            except ConnectionError as exc:
                raise IngestError(f"--engine ray: {exc}") from None
    say = log or (lambda _line: None)
    record = IngestRecord(spec, settings.collection)
    record.check()
    sources = plan_sources(paths, labels, load_folders(record), SUFFIXES)
    recorded = record.settings()
    check_store_folder(spec, record.store_kind(), create=True)
    try:
        cache_dir = str(record.directory / "summaries")
        embed = embed_model if embed_model is not None else load_model(settings.embed_model, settings.show_progress,
                                                                        settings.embed_options())
        steps = build_steps(settings, embed, cache_dir)
    except ValueError as exc:  # EvaluationSetupError: the model or the LLM cannot be set up
        raise IngestError(str(exc)) from None
    current = fingerprint(steps, embed)
    if recorded is not None and comparable(recorded["settings"]) != current:
        raise IngestError(f"collection {settings.collection!r} of {spec} was built with other settings: "
                          + "; ".join(differences(comparable(recorded["settings"]), current))
                          + ". Ingest into a new --vector-store or --collection, or delete the store to rebuild it")
    report = IngestReport(store=str(spec), collection=settings.collection, engine=settings.engine,
                          missing=sources.missing)
    seen: set[str] = set()
    held = [f"{path}: no such folder or file (its documents are kept; llama-sac rm removes them)"
            for path in sources.missing] + sources.notes  # said once the store is open (else the error says it)
    files = sources.files
    named = {Path(os.path.abspath(os.path.expanduser(p))) for p in paths}  # links named are followed
    forget: set[str] = set()  # documents not read whose rows go (a broken link, a link not followed, a vanished file)
    rounds = range(0, len(files), settings.batch_documents)
    augmentation = steps[-1]  # build_steps: parser, pages, augmentation
    assert isinstance(augmentation, SummaryAugmentationTransformation)
    summarizer = augmentation.summarizer
    unnamed, carried = 0, set[str]()  # documents whose summary folds in no metadata; the keys the documents carry
    with ExitStack() as stack:
        run: _Run | None = None
        for number, first in enumerate(rounds, 1):
            documents: list[Document] = []
            desc = "Reading files" + (f" (round {number}/{len(rounds)})" if len(rounds) > 1 else "")
            for path, doc_id in tqdm(files[first: first + settings.batch_documents], desc=desc, unit="file",
                                     disable=not settings.show_progress):
                try:
                    documents.append(read_file(path, settings.max_file_bytes, settings.max_pages,
                                               () if path in named else sources.walked, doc_id))
                except Exception as exc:  # noqa: BLE001 - any reader error: reported per file, the file skipped
                    if isinstance(exc, Unreadable) and exc.forget:
                        forget.add(doc_id)
                    report.skipped[shown(path)] = why_unreadable(exc)
                    (held.append if run is None else say)(f"skipped {shown(path)}: {why_unreadable(exc)}")
            if not documents:
                continue
            if run is None:  # the first readable round: now the store is opened (and created)
                run = _open(stack, spec, record, settings, steps, embed, embed_model, cache_dir, current, report, say)
                save_folders(record, sources.folders)
                for line in held:
                    say(line)
            seen.update(d.id_ for d in documents)
            unnamed += sum(not summarizer.folded_metadata(d.metadata) for d in documents)
            carried.update(key for d in documents for key in d.metadata)
            run.round(documents)
        if run is None:
            raise IngestError("nothing could be read (the store was not touched): "
                              + "; ".join(f"{p}: {why}" for p, why in report.skipped.items()))
        run.remove_vanished(sources.folders, sources.walked, seen, forget)
        run.unrecord_unseen(seen)
        save_document_index(record, run.vector_store)  # query and serve then need not read every chunk
    if summarizer.metadata_keys and unnamed:
        say(f"{unnamed} of {len(seen)} document(s) carry none of the summary metadata keys "
            f"{list(summarizer.metadata_keys)}: their summaries "
            f"are content-only (the documents' metadata keys: {', '.join(sorted(carried))})")
    if report.empty:
        say(f"no chunk from {len(report.empty)} file(s) without text (empty or whitespace only; recorded, nothing "
            f"written): {', '.join(report.empty)}")
    report.seconds = time.perf_counter() - started
    return report


def _open(stack: ExitStack, spec: StoreSpec, record: IngestRecord, settings: IngestSettings,
          steps: list[TransformComponent], embed: BaseEmbedding, injected: BaseEmbedding | None, cache_dir: str,
          current: dict[str, Any], report: IngestReport, say: Callable[[str], None]) -> _Run:
    """Start (or join) Ray for the Ray engine, open the store, repair the documents an interrupted run was writing,
    check the record against the store, record the settings; the state of this run."""
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
    run = _Run(opened.vector_store, docstore, transform, steps[-1], record, journal, report, settings, say, counts,
               RowCheck(), store_errors(spec.kind))
    for doc_id in interrupted:
        run.forget(doc_id, delete_rows=True)
    if interrupted:
        report.redone += interrupted
        say(f"{len(interrupted)} document(s) were being written when the last run stopped: their rows are deleted "
            f"and they are written again: {', '.join(interrupted[:5])}{' ...' if len(interrupted) > 5 else ''}")
    run.fold()
    listed = sorted(set(docstore.get_all_document_hashes().values()))
    run.check = check_rows(spec, opened, listed, counts) if record.exists() else RowCheck()
    if run.check.warning:
        say(run.check.warning)
    record.write_settings({"settings": current, "embed_model_name": settings.embed_model, "store": spec.kind,
                           "embed_backend": model_backend(embed),
                           "embed_precision": current["embed_model"]["precision"]})
    record.save_rows({doc_id: counts[doc_id] for doc_id in listed if doc_id in counts})
    return run


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
class _Run:
    """One ``ingest`` run with its store open: the rounds, each document committed on its own, and the removal of
    vanished files."""

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
