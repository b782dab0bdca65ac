"""``llama-sac ingest`` and ``llama-sac query``: a user's own folders of contracts into a real vector store, and back.

:func:`ingest` reads files (``.txt``/``.md`` as strict UTF-8; ``.pdf``/``.docx`` page by page; regular files only,
within ``max_file_bytes``/``max_pages``: :mod:`~llama_index_sac.apps.ingest.readers`), one LlamaIndex ``Document``
per file with its absolute path as id (so ids are stable across runs), then runs a
:class:`~llama_index_sac.ingestion.SACIngestionPipeline` (parser -> page numbers ->
``SummaryAugmentationTransformation``, one summary per whole document -> embedding model) into Chroma or Qdrant
with a docstore beside the store
(:mod:`~llama_index_sac.apps.ingest.files`). A second run processes only new and changed files (the changed ones'
rows are replaced), leaves every other row untouched, and removes the rows of files that disappeared from the folders
given (``DocstoreStrategy.UPSERTS_AND_DELETE``, limited to those folders: files ingested from other paths stay).

Documents are processed in rounds of ``batch_documents`` files: read, transformed, written, docstore saved; memory
stays bounded by a round and an interrupted run keeps its finished rounds. ``engine="ray"`` runs the transformations
of each round on Ray (:mod:`~llama_index_sac.apps.ingest.ray_engine`) with the same result. File metadata is the stable
part of LlamaIndex's default (``file_path``, ``file_name``, ``file_type``, ``file_size``): dates are left out
because the docstore hashes metadata too, and an access time would make every file "changed".

The ingest record beside the store is a cache of what the store holds: each run first checks that the store holds the
rows the record lists (:func:`~llama_index_sac.apps.ingest.store.check_rows`) and writes again the documents it
lacks. :func:`query` (:mod:`~llama_index_sac.apps.ingest.query`) retrieves the top-k chunks of a question. The CLI
commands are in :mod:`~llama_index_sac.apps.ingest.commands`; the user guide is ``docs/ingest.md``.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.ingestion import DocstoreStrategy
from llama_index.core.schema import BaseNode, Document, TransformComponent
from tqdm.auto import tqdm

from llama_index_sac._util import require_extra
from llama_index_sac.apps.ingest.files import (
    IngestError,
    IngestRecord,
    StoreSpec,
    Unreadable,
    find_files,
    read_file,
    why_unreadable,
)
from llama_index_sac.apps.ingest.query import QueryHit, load_model, query
from llama_index_sac.apps.ingest.readers import shown
from llama_index_sac.apps.ingest.steps import IngestSettings, build_steps, differences, embed_steps, fingerprint
from llama_index_sac.apps.ingest.store import RowCheck, check_rows, check_store_folder, open_store, store_errors
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation
from llama_index_sac.ingestion.pipeline import SACIngestionPipeline, failed_documents

__all__ = ["IngestError", "IngestReport", "IngestSettings", "QueryHit", "StoreSpec", "ingest", "query"]


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
    chunks_written: int = 0
    summaries: int = 0  # summaries computed this run (the summarizer's calls)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it could not be read (not ingested)
    failed: dict[str, str] = field(default_factory=dict)  # document id -> why its summary failed (not written)
    empty: list[str] = field(default_factory=list)  # documents written this run that gave no chunk (no text)
    seconds: float = 0.0

    def line(self) -> str:
        """The final line of ``llama-sac ingest``."""
        extra = "".join(f", {n} {what}" for n, what in ((len(self.skipped), "unreadable file(s) skipped"),
                                                         (len(self.failed), "summary failure(s)")) if n)
        return (f"{self.store} (collection {self.collection}, engine {self.engine}): documents {self.new} new, "
                f"{self.changed} changed, {self.unchanged} unchanged, {self.removed} removed{extra}; "
                f"{self.chunks_written} chunks written in {self.seconds:.1f} s")


# -- ingestion -------------------------------------------------------------------------------------------------------
def _in_scope(doc_id: str, folders: Sequence[Path]) -> bool:
    return any(doc_id.startswith(str(folder) + os.sep) for folder in folders)


def ingest(paths: Sequence[str | os.PathLike[str]], store: StoreSpec | str, settings: IngestSettings | None = None,
           *, embed_model: BaseEmbedding | None = None, log: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest the files of ``paths`` into ``store`` (module docstring); returns what was done. One document per file.

    The ingest record is checked against the store first: documents whose rows the store does not hold as recorded
    (a store copied, damaged or replaced under the record) are written again, and ``log`` says so in one line.

    Args:
        paths: folders (walked recursively) and files.
        store: ``"chroma:DIR"``, ``"qdrant:DIR"`` or a :class:`StoreSpec`.
        settings: the options (default :class:`IngestSettings()`).
        embed_model: an embedding model to use instead of ``settings.embed_model`` (with ``engine="ray"`` it is
            pickled to the workers: it must be rebuilt correctly from its fields).
        log: receives one line per unreadable file and per failed summary, one for the files that gave no chunk
            (empty) and one when the store lacks rows the record lists.

    Raises:
        IngestError: a missing path, no file to ingest, nothing readable (the store is then not opened), a folder
            holding the other kind of store (or whose record names it), a store that cannot be opened, read or
            written, a bad collection, settings other than the collection's (the differences are named), an embedding
            model or LLM that cannot be set up, or a failure inside Ray.
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
    say = log or (lambda _line: None)
    files, folders = find_files(paths)
    named = {Path(os.path.abspath(os.path.expanduser(p))) for p in paths}  # links named are followed
    record = IngestRecord(spec, settings.collection)
    recorded = record.settings()
    check_store_folder(spec, record.store_kind(), create=True)
    try:
        cache_dir = str(record.directory / "summaries")
        embed = embed_model if embed_model is not None else load_model(settings.embed_model, settings.show_progress)
        steps = build_steps(settings, embed, cache_dir)
    except ValueError as exc:  # EvaluationSetupError: the model or the LLM cannot be set up
        raise IngestError(str(exc)) from None
    current = fingerprint(steps, embed)
    if recorded is not None and recorded["settings"] != current:
        raise IngestError(f"collection {settings.collection!r} of {spec} was built with other settings: "
                          + "; ".join(differences(recorded["settings"], current))
                          + ". Ingest into a new --vector-store or --collection, or delete the store to rebuild it")
    report = IngestReport(store=str(spec), collection=settings.collection, engine=settings.engine)
    seen: set[str] = set()
    forget: set[str] = set()  # documents not read whose rows go (a broken link, a link not followed, a vanished file)
    held: list[str] = []  # unreadable files before the store is opened: said then (if nothing is, the error says it)
    rounds = range(0, len(files), settings.batch_documents)
    with ExitStack() as stack:
        run: _Run | None = None
        for number, first in enumerate(rounds, 1):
            documents: list[Document] = []
            desc = "Reading files" + (f" (round {number}/{len(rounds)})" if len(rounds) > 1 else "")
            for path in tqdm(files[first: first + settings.batch_documents], desc=desc, unit="file",
                             disable=not settings.show_progress):
                try:
                    documents.append(read_file(path, settings.max_file_bytes, settings.max_pages,
                                               () if path in named else folders))
                except Exception as exc:  # noqa: BLE001 - any reader error: reported per file, the file skipped
                    if isinstance(exc, Unreadable) and exc.forget:
                        forget.add(str(path))
                    report.skipped[shown(path)] = why_unreadable(exc)
                    (held.append if run is None else say)(f"skipped {shown(path)}: {why_unreadable(exc)}")
            if not documents:
                continue
            if run is None:  # the first readable round: now the store is opened (and created)
                run = _open(stack, spec, record, settings, steps, embed, embed_model, cache_dir, current, report, say)
                for line in held:
                    say(line)
            seen.update(d.id_ for d in documents)
            run.round(documents)
        if run is None:
            raise IngestError("nothing could be read (the store was not touched): "
                              + "; ".join(f"{p}: {why}" for p, why in report.skipped.items()))
        run.remove_vanished(folders, seen, forget)
    if report.empty:
        say(f"no chunk from {len(report.empty)} file(s) without text (empty or whitespace only; recorded, nothing "
            f"written): {', '.join(report.empty)}")
    report.seconds = time.perf_counter() - started
    return report


def _open(stack: ExitStack, spec: StoreSpec, record: IngestRecord, settings: IngestSettings,
          steps: list[TransformComponent], embed: BaseEmbedding, injected: BaseEmbedding | None, cache_dir: str,
          current: dict[str, Any], report: IngestReport, say: Callable[[str], None]) -> _Run:
    """Start (or join) Ray for the Ray engine, open the store, repair an interrupted run, check the record against
    the store, record the settings; the state of this run."""
    transformations: list[TransformComponent] = [*steps, embed]
    if settings.show_progress:
        transformations = [_WithProgress(step=step) for step in transformations]
    if settings.engine == "ray":
        from llama_index_sac.apps.ingest.ray_engine import RayStages, ray_session

        try:
            resources = stack.enter_context(ray_session())
        except Exception as exc:  # noqa: BLE001 - a cluster that cannot be started or joined
            where = os.environ.get("RAY_ADDRESS") or "a local cluster"
            raise IngestError(f"cannot start or join Ray ({where}): {type(exc).__name__}: {exc}") from None
        transformations = [RayStages(
            parse_and_summarize=partial(build_steps, settings, injected, cache_dir),
            embed=partial(embed_steps, settings, injected),
            workers=settings.workers or max(1, int(resources.get("CPU", 1))),
            show_progress=settings.show_progress,
        )]
    stack.enter_context(record.lock())
    opened = stack.enter_context(open_store(spec, settings.collection, create=True))
    if not record.exists() and opened.rows:
        raise IngestError(f"collection {settings.collection!r} of {spec} holds {opened.rows} rows that llama-sac "
                          f"ingest did not write (no {record.directory}): use another --collection or --vector-store")
    docstore = record.load_docstore()
    for doc_id in record.pending():  # rows of new documents of a round that did not finish
        if docstore.get_document_hash(doc_id) is None:
            opened.vector_store.delete(doc_id)
    record.clear_pending()
    counts = record.rows()
    listed = sorted(set(docstore.get_all_document_hashes().values()))
    check = check_rows(spec, opened, listed, counts) if record.exists() else RowCheck()
    if check.warning:
        say(check.warning)
    record.write_settings({"settings": current, "embed_model_name": settings.embed_model, "store": spec.kind})
    record.save_rows({doc_id: counts[doc_id] for doc_id in listed if doc_id in counts})
    pipeline = SACIngestionPipeline(transformations=transformations, vector_store=opened.vector_store,
                                    docstore=docstore, docstore_strategy=DocstoreStrategy.UPSERTS, disable_cache=True,
                                    documents=None, readers=None)
    return _Run(pipeline, steps[-1], record, report, settings, say, counts, check, store_errors(spec.kind))


class _WithProgress(TransformComponent):
    """A step called with ``show_progress=True`` (LlamaIndex's pipeline shows one bar over the steps, not theirs)."""

    step: TransformComponent

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.step(nodes, **{**kwargs, "show_progress": True})


@dataclass
class _Run:
    """One ``ingest`` run with its store open: the rounds and the removal of vanished files."""

    pipeline: SACIngestionPipeline
    augmentation: TransformComponent
    record: IngestRecord
    report: IngestReport
    settings: IngestSettings
    say: Callable[[str], None]
    counts: dict[str, int]  # rows per document, as the record will say (rows.json)
    check: RowCheck
    store_errors: tuple[type[BaseException], ...]

    def round(self, documents: list[Document]) -> None:
        """One round: rewrite what the store lacks, classify by the docstore, run the pipeline (upserts), save."""
        docstore, report = self.pipeline.docstore, self.report
        assert docstore is not None
        for doc_id in [d.id_ for d in documents if d.id_ in self.check.repair]:  # the record said more than the store
            self._forget(doc_id, delete_rows=bool(self.check.store_rows.get(doc_id)))
            self.check.repair.discard(doc_id)
        hashes = {d.id_: docstore.get_document_hash(d.id_) for d in documents}
        new = [d.id_ for d in documents if hashes[d.id_] is None]
        changed = sum(1 for d in documents if hashes[d.id_] not in (None, d.hash))
        report.new += len(new)
        report.changed += changed
        report.unchanged += len(documents) - len(new) - changed
        augmentation = self.augmentation
        assert isinstance(augmentation, SummaryAugmentationTransformation)
        calls = augmentation.summarizer_calls  # in this process (the local engine)
        self.record.set_pending(new)
        try:
            nodes = self.pipeline.run(documents=documents, store_doc_text=False)
        except Exception as exc:
            if self.settings.engine != "ray" or isinstance(exc, self.store_errors):
                raise
            from llama_index_sac.apps.ingest.ray_engine import ray_error_message

            raise IngestError(f"the Ray engine failed: {ray_error_message(exc)} (the next run repairs the store)"
                              ) from exc
        failed = failed_documents(nodes)
        for doc_id, why in failed.items():
            self.say(f"no summary for {doc_id}: {why} (not written; the next run retries it)")
        report.failed.update(failed)
        written = Counter(n.ref_doc_id for n in nodes if n.embedding is not None and n.ref_doc_id not in failed)
        report.chunks_written += sum(written.values())
        for document in documents:
            if hashes[document.id_] == document.hash:
                continue  # unchanged: its rows were not touched
            if document.id_ in failed:
                self.counts.pop(document.id_, None)
            else:
                self.counts[document.id_] = written.get(document.id_, 0)
                if not written.get(document.id_):
                    report.empty.append(document.id_)
        if self.settings.engine == "local":
            report.summaries += augmentation.summarizer_calls - calls
        else:  # Ray: every document run was summarized once, in a worker
            report.summaries += len({n.ref_doc_id for n in nodes if "summary_strategy" in n.metadata})
        self.record.save_rows(self.counts)  # before the docstore: a crash in between only makes a document "changed"
        self.record.save_docstore(docstore)  # type: ignore[arg-type]
        self.record.clear_pending()

    def _forget(self, doc_id: str, *, delete_rows: bool) -> None:
        """Take ``doc_id`` out of the docstore and the row counts (and, with ``delete_rows``, its rows out of the
        store), so the next round writes it as new."""
        docstore, vector_store = self.pipeline.docstore, self.pipeline.vector_store
        assert docstore is not None and vector_store is not None
        if delete_rows:
            vector_store.delete(doc_id)
        docstore.delete_document(doc_id, raise_error=False)
        docstore.delete_ref_doc(doc_id, raise_error=False)
        self.counts.pop(doc_id, None)

    def remove_vanished(self, folders: Sequence[Path], seen: set[str], forget: set[str]) -> None:
        """Delete the documents of the given folders whose files no longer exist (a link whose target was deleted
        included), and those of ``forget`` (rows and docstore entries)."""
        docstore = self.pipeline.docstore
        assert docstore is not None
        gone = sorted(doc_id for doc_id in set(docstore.get_all_document_hashes().values())
                      if doc_id not in seen and (doc_id in forget or (_in_scope(doc_id, folders)
                                                                      and not os.path.exists(doc_id))))
        for doc_id in gone:
            self._forget(doc_id, delete_rows=True)
        self.report.removed += len(gone)
        if gone:
            self.record.save_rows(self.counts)
            self.record.save_docstore(docstore)  # type: ignore[arg-type]
