"""``llama-sac ingest`` and ``llama-sac query``: a user's own folders of contracts into a real vector store, and back.

:func:`ingest` reads files (``.txt``/``.md`` as strict UTF-8; ``.pdf``/``.docx`` with LlamaIndex's
``SimpleDirectoryReader`` readers when ``llama-index-readers-file`` is installed), one LlamaIndex ``Document`` per
file with its absolute path as id (so ids are stable across runs), then runs a
:class:`~llama_index_sac.ingestion.SACIngestionPipeline` (parser -> ``SummaryAugmentationTransformation``, one summary
per whole document -> embedding model) into Chroma or Qdrant with a docstore beside the store
(:mod:`~llama_index_sac.harness.ingest_io`). A second run processes only new and changed files (the changed ones'
rows are replaced), leaves every other row untouched, and removes the rows of files that disappeared from the folders
given (``DocstoreStrategy.UPSERTS_AND_DELETE``, limited to those folders: files ingested from other paths stay).

Documents are processed in rounds of ``batch_documents`` files: read, transformed, written, docstore saved; memory
stays bounded by a round and an interrupted run keeps its finished rounds. ``engine="ray"`` runs the transformations
of each round on Ray (:mod:`~llama_index_sac.harness.ray_engine`) with the same result. File metadata is the stable
part of LlamaIndex's default (``file_path``, ``file_name``, ``file_type``, ``file_size``): dates are left out
because the docstore hashes metadata too, and an access time would make every file "changed".

:func:`query` retrieves the top-k chunks of a question. The CLI commands are in
:mod:`~llama_index_sac.harness.ingest_cli`; the user guide is ``docs/ingest.md``.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal

from llama_index.core import VectorStoreIndex
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, model_validator
from llama_index.core.ingestion import DocstoreStrategy
from llama_index.core.ingestion.pipeline import remove_unstable_values
from llama_index.core.schema import BaseNode, Document, TransformComponent
from tqdm.auto import tqdm

from llama_index_sac._util import require_extra
from llama_index_sac.augmentation import SummaryAugmentationTransformation
from llama_index_sac.document_retrieval import DocumentAwareRetriever, DocumentIndex
from llama_index_sac.harness.components import LLMSummarizerSettings, settings_class
from llama_index_sac.harness.factories import build_llm_summarizer, build_parser, load_embedding_model, model_identity
from llama_index_sac.harness.ingest_io import (
    PLAIN_SUFFIXES,
    IngestError,
    IngestRecord,
    StoreSpec,
    check_collection,
    find_files,
    open_store,
    read_file,
    rich_readers,
    why_unreadable,
)
from llama_index_sac.ingestion import SACIngestionPipeline, failed_documents
from llama_index_sac.summarizers import BaseSummarizer, ExtractiveSummarizer

__all__ = ["IngestError", "IngestReport", "IngestSettings", "QueryHit", "StoreSpec", "ingest", "query"]


class IngestSettings(BaseModel):
    """The options of :func:`ingest` (the CLI's, by the same names). Defaults of the components (chunk size, summary
    length...) are the components' own: ``None`` here means "the component's default".

    Raises:
        ValidationError: a value out of range or a combination that does not apply (the message names the option).
    """

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(default="llama-sac", description="Collection (table) in the vector store.")
    engine: Literal["local", "ray"] = Field(default="local", description="local (this process) or ray (Ray Data).")
    parser: Literal["recursive", "semantic", "hybrid"] = Field(default="recursive", description="Node parser.")
    chunk_size: int | None = Field(default=None, gt=0, description="Chunk size in characters (recursive, hybrid); "
                                   "None: the parser's default (RecursiveCharacterNodeParser.chunk_size).")
    summarizer: Literal["extractive", "llm"] = Field(
        default="extractive", description="extractive (offline, deterministic: shipped term table) or llm.")
    llm: str | None = Field(default=None, min_length=1, description="--summarizer llm: OpenAI model name, local "
                            ".gguf path, or the model served at llm_api_base.")
    llm_api_base: str | None = Field(default=None, min_length=1, description="OpenAI-compatible endpoint for llm.")
    embed_model: str | None = Field(default=None, min_length=1, description="Embedding model (Hugging Face id or "
                                    "local folder); None: all-MiniLM-L6-v2, offline.")
    workers: int | None = Field(default=None, ge=1, description="--engine ray: maximum Ray actors per stage "
                                "(None: the cluster's CPUs).")
    batch_documents: int = Field(default=1000, ge=1, description="Files per round (read, transform, write, save).")
    show_progress: bool = Field(default=True, description="Progress bars (stderr).")

    @model_validator(mode="after")
    def _check(self) -> IngestSettings:
        check_collection(self.collection)
        if self.summarizer == "llm" and self.llm is None:
            raise ValueError("--summarizer llm needs --llm")
        if self.summarizer != "llm" and (self.llm is not None or self.llm_api_base is not None):
            raise ValueError("--llm and --llm-api-base need --summarizer llm")
        if self.parser == "semantic" and self.chunk_size is not None:
            raise ValueError("--chunk-size applies to the recursive and hybrid parsers, not semantic")
        if self.engine != "ray" and self.workers is not None:
            raise ValueError("--workers needs --engine ray (the local engine runs in this process)")
        return self


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
    seconds: float = 0.0

    def line(self) -> str:
        """The final line of ``llama-sac ingest``."""
        extra = "".join(f", {n} {what}" for n, what in ((len(self.skipped), "unreadable file(s) skipped"),
                                                         (len(self.failed), "summary failure(s)")) if n)
        return (f"{self.store} (collection {self.collection}, engine {self.engine}): documents {self.new} new, "
                f"{self.changed} changed, {self.unchanged} unchanged, {self.removed} removed{extra}; "
                f"{self.chunks_written} chunks written in {self.seconds:.1f} s")


# -- components ------------------------------------------------------------------------------------------------------
def _summarizer(settings: IngestSettings) -> BaseSummarizer:
    if settings.summarizer == "extractive":
        return ExtractiveSummarizer()  # the shipped term table: a summary is a function of the document alone
    assert settings.llm is not None  # IngestSettings checks it
    return build_llm_summarizer(LLMSummarizerSettings(model=settings.llm, api_base=settings.llm_api_base))


def build_steps(settings: IngestSettings, embed: BaseEmbedding | None,
                cache_dir: str | None) -> list[TransformComponent]:
    """``[parser, SummaryAugmentationTransformation]`` of ``settings``: the same in this process and in every Ray
    worker. ``embed`` (semantic and hybrid parsers only) is loaded from ``settings`` when ``None``."""
    parser_settings = settings_class("parser", settings.parser)
    assert parser_settings is not None
    options = {"chunk_size": settings.chunk_size} if settings.chunk_size is not None else {}
    if settings.parser != "recursive" and embed is None:
        embed = load_embedding_model(settings.embed_model)
    parser = build_parser(parser_settings(**options), embed)  # type: ignore[arg-type]
    augmentation = SummaryAugmentationTransformation(summarizer=_summarizer(settings), on_error="skip",
                                                     cache_dir=cache_dir if settings.summarizer == "llm" else None)
    return [parser, augmentation]


def _embed_steps(settings: IngestSettings, embed: BaseEmbedding | None) -> list[BaseEmbedding]:
    return [embed if embed is not None else load_embedding_model(settings.embed_model)]


def _drop_keys(value: Any, keys: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _drop_keys(v, keys) for k, v in value.items() if k not in keys}
    return value


def fingerprint(steps: Sequence[TransformComponent], embed: BaseEmbedding) -> dict[str, Any]:
    """The settings that decide a collection's rows: the parser's, the summary's and the embedding model's."""
    parser, augmentation = steps
    unstable = frozenset({"embed_model", "show_progress", "num_workers", "on_error", "failure_epoch", "summarizer",
                          "callback_manager"})
    value = {"parser": _drop_keys(parser.to_dict(), unstable), "summary": _drop_keys(augmentation.to_dict(), unstable),
             "embed_model": model_identity(embed)}
    return json.loads(remove_unstable_values(json.dumps(value, sort_keys=True, default=str)))


def _differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out = []
    for part in sorted(set(old) | set(new)):
        a, b = old.get(part) or {}, new.get(part) or {}
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out.append(f"{part}.{key}: {json.dumps(a.get(key))[:80]} -> {json.dumps(b.get(key))[:80]}")
    return out


# -- ingestion -------------------------------------------------------------------------------------------------------
def _in_scope(doc_id: str, folders: Sequence[Path]) -> bool:
    return any(doc_id.startswith(str(folder) + os.sep) for folder in folders)


def ingest(paths: Sequence[str | os.PathLike[str]], store: StoreSpec | str, settings: IngestSettings | None = None,
           *, embed_model: BaseEmbedding | None = None, log: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest the files of ``paths`` into ``store`` (module docstring); returns what was done. One document per file.

    Args:
        paths: folders (walked recursively) and files.
        store: ``"chroma:DIR"``, ``"qdrant:DIR"`` or a :class:`StoreSpec`.
        settings: the options (default :class:`IngestSettings()`).
        embed_model: an embedding model to use instead of ``settings.embed_model`` (with ``engine="ray"`` it is
            pickled to the workers: it must be rebuilt correctly from its fields).
        log: receives one line per unreadable file and per failed summary.

    Raises:
        IngestError: a missing path, no file to ingest, nothing readable (the store is then not opened), a bad store
            or collection, settings other than the collection's (the differences are named), an embedding model or
            LLM that cannot be set up, or a failure inside Ray.
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
    readers = rich_readers()
    files, folders = find_files(paths, PLAIN_SUFFIXES + tuple(readers))
    try:
        embed = embed_model if embed_model is not None else load_embedding_model(settings.embed_model)
        record = IngestRecord(spec, settings.collection)
        cache_dir = str(record.directory / "summaries")
        steps = build_steps(settings, embed, cache_dir)
    except ValueError as exc:  # EvaluationSetupError: the model or the LLM cannot be set up
        raise IngestError(str(exc)) from None
    current = fingerprint(steps, embed)
    recorded = record.settings()
    if recorded is not None and recorded["settings"] != current:
        raise IngestError(f"collection {settings.collection!r} of {spec} was built with other settings: "
                          + "; ".join(_differences(recorded["settings"], current))
                          + ". Ingest into a new --vector-store or --collection, or delete the store to rebuild it")
    report = IngestReport(store=str(spec), collection=settings.collection, engine=settings.engine)
    seen: set[str] = set()
    rounds = range(0, len(files), settings.batch_documents)
    with ExitStack() as stack:
        pipeline: SACIngestionPipeline | None = None
        for number, first in enumerate(rounds, 1):
            documents: list[Document] = []
            desc = "Reading files" + (f" (round {number}/{len(rounds)})" if len(rounds) > 1 else "")
            for path in tqdm(files[first: first + settings.batch_documents], desc=desc, unit="file",
                             disable=not settings.show_progress):
                try:
                    documents.append(read_file(path, readers))
                except Exception as exc:  # noqa: BLE001 - any reader error: reported per file, the file skipped
                    report.skipped[str(path)] = why_unreadable(exc)
                    say(f"skipped {path}: {why_unreadable(exc)}")
            if not documents:
                continue
            if pipeline is None:  # the first readable round: now the store is opened (and created)
                pipeline = _open(stack, spec, record, settings, steps, embed, embed_model, cache_dir, current)
            seen.update(d.id_ for d in documents)
            _round(pipeline, steps[1], documents, record, report, settings, say)
        if pipeline is None:
            raise IngestError("nothing could be read (the store was not touched): "
                              + "; ".join(f"{p}: {why}" for p, why in report.skipped.items()))
        _remove_vanished(pipeline, folders, seen, record, report)
    report.seconds = time.perf_counter() - started
    return report


def _open(stack: ExitStack, spec: StoreSpec, record: IngestRecord, settings: IngestSettings,
          steps: list[TransformComponent], embed: BaseEmbedding, injected: BaseEmbedding | None, cache_dir: str,
          current: dict[str, Any]) -> SACIngestionPipeline:
    """Start (or join) Ray for the Ray engine, open the store, repair an interrupted run, record the settings; the
    pipeline of this run."""
    transformations: list[TransformComponent] = [*steps, embed]
    if settings.show_progress:
        transformations = [_WithProgress(step=step) for step in transformations]
    if settings.engine == "ray":
        from llama_index_sac.harness.ray_engine import RayStages, ray_session

        try:
            resources = stack.enter_context(ray_session())
        except Exception as exc:  # noqa: BLE001 - a cluster that cannot be started or joined
            where = os.environ.get("RAY_ADDRESS") or "a local cluster"
            raise IngestError(f"cannot start or join Ray ({where}): {type(exc).__name__}: {exc}") from None
        transformations = [RayStages(
            parse_and_summarize=partial(build_steps, settings, injected, cache_dir),
            embed=partial(_embed_steps, settings, injected),
            workers=settings.workers or max(1, int(resources.get("CPU", 1))),
            show_progress=settings.show_progress,
        )]
    stack.enter_context(record.lock())
    vector_store, rows = stack.enter_context(open_store(spec, settings.collection, create=True))
    if not record.exists() and rows:
        raise IngestError(f"collection {settings.collection!r} of {spec} holds {rows} rows that llama-sac ingest did "
                          f"not write (no {record.directory}): use another --collection or --vector-store")
    docstore = record.load_docstore()
    for doc_id in record.pending():  # rows of new documents of a round that did not finish
        if docstore.get_document_hash(doc_id) is None:
            vector_store.delete(doc_id)
    record.clear_pending()
    record.write_settings({"settings": current, "embed_model_name": settings.embed_model})
    return SACIngestionPipeline(transformations=transformations, vector_store=vector_store, docstore=docstore,
                                docstore_strategy=DocstoreStrategy.UPSERTS, disable_cache=True, documents=None,
                                readers=None)


class _WithProgress(TransformComponent):
    """A step called with ``show_progress=True`` (LlamaIndex's pipeline shows one bar over the steps, not theirs)."""

    step: TransformComponent

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> Sequence[BaseNode]:
        return self.step(nodes, **{**kwargs, "show_progress": True})


def _round(pipeline: SACIngestionPipeline, augmentation: TransformComponent, documents: list[Document],
           record: IngestRecord, report: IngestReport, settings: IngestSettings, say: Callable[[str], None]) -> None:
    """One round: classify by the docstore, run the pipeline (upserts), save the docstore."""
    docstore = pipeline.docstore
    assert docstore is not None
    hashes = {d.id_: docstore.get_document_hash(d.id_) for d in documents}
    new = [d.id_ for d in documents if hashes[d.id_] is None]
    changed = sum(1 for d in documents if hashes[d.id_] not in (None, d.hash))
    report.new += len(new)
    report.changed += changed
    report.unchanged += len(documents) - len(new) - changed
    assert isinstance(augmentation, SummaryAugmentationTransformation)
    calls = augmentation.summarizer_calls  # in this process (the local engine)
    record.set_pending(new)
    try:
        nodes = pipeline.run(documents=documents, store_doc_text=False)
    except Exception as exc:
        if settings.engine != "ray":
            raise
        from llama_index_sac.harness.ray_engine import ray_error_message

        raise IngestError(f"the Ray engine failed: {ray_error_message(exc)} (the next run repairs the store)") from exc
    failed = failed_documents(nodes)
    for doc_id, why in failed.items():
        say(f"no summary for {doc_id}: {why} (not written; the next run retries it)")
    report.failed.update(failed)
    report.chunks_written += sum(1 for n in nodes if n.embedding is not None and n.ref_doc_id not in failed)
    if settings.engine == "local":
        report.summaries += augmentation.summarizer_calls - calls
    else:  # Ray: every document run was summarized once, in a worker
        report.summaries += len({n.ref_doc_id for n in nodes if "summary_strategy" in n.metadata})
    record.save_docstore(docstore)  # type: ignore[arg-type]
    record.clear_pending()


def _remove_vanished(pipeline: SACIngestionPipeline, folders: Sequence[Path], seen: set[str], record: IngestRecord,
                     report: IngestReport) -> None:
    """Delete the documents of the given folders whose files no longer exist (rows and docstore entries)."""
    docstore, vector_store = pipeline.docstore, pipeline.vector_store
    assert docstore is not None and vector_store is not None
    gone = sorted(doc_id for doc_id in set(docstore.get_all_document_hashes().values())
                  if doc_id not in seen and _in_scope(doc_id, folders) and not os.path.lexists(doc_id))
    for doc_id in gone:
        vector_store.delete(doc_id)
        docstore.delete_document(doc_id, raise_error=False)
        docstore.delete_ref_doc(doc_id, raise_error=False)
    report.removed += len(gone)
    if gone:
        record.save_docstore(docstore)  # type: ignore[arg-type]


# -- query -----------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class QueryHit:
    """One retrieved chunk: its document, character offsets ``[start, end)`` in the document, the store's score
    (higher is closer), the document's summary and the chunk text."""

    doc_id: str
    start: int | None
    end: int | None
    score: float | None
    summary: str | None
    text: str


def query(question: str, store: StoreSpec | str, *, collection: str = "llama-sac", k: int = 5,
          embed_model: BaseEmbedding | None = None, embed_model_name: str | None = None,
          document_aware: bool = False) -> list[QueryHit]:
    """The ``k`` chunks of the collection closest to ``question``, best first.

    The embedding model is ``embed_model``, else ``embed_model_name``, else the one the collection was ingested with.
    With ``document_aware``, :class:`~llama_index_sac.document_retrieval.DocumentAwareRetriever` with its defaults
    ranks them (its document index is read from the collection: every row once per call).

    Raises:
        IngestError: an empty question, ``k < 1``, a missing store or collection, or an embedding model other than
            the collection's.
    """
    if not question.strip():
        raise IngestError("the question is empty")
    if k < 1:
        raise IngestError(f"--k must be at least 1, got {k}")
    spec = store if isinstance(store, StoreSpec) else StoreSpec.parse(store)
    record = IngestRecord(spec, collection)
    recorded = record.settings()
    name = embed_model_name if embed_model_name is not None else (recorded or {}).get("embed_model_name")
    with open_store(spec, collection, create=False) as (vector_store, _rows):
        try:
            embed = embed_model if embed_model is not None else load_embedding_model(name)
        except ValueError as exc:
            raise IngestError(str(exc)) from None
        if recorded is not None and recorded["settings"].get("embed_model") != model_identity(embed):
            raise IngestError(f"collection {collection!r} was embedded with {recorded['settings']['embed_model']}, "
                              f"not {model_identity(embed)}: pass that --embed-model")
        index = VectorStoreIndex.from_vector_store(vector_store, embed_model=embed)
        if document_aware:
            try:
                documents = DocumentIndex.from_source(vector_store)
            except ValueError as exc:  # no summaries: not a SAC collection
                raise IngestError(f"--document-aware: {exc}") from None
            hits = DocumentAwareRetriever(index, documents, similarity_top_k=k).retrieve(question)
        else:
            hits = index.as_retriever(similarity_top_k=k).retrieve(question)
    return [QueryHit(doc_id=h.node.ref_doc_id or h.node.node_id, start=getattr(h.node, "start_char_idx", None),
                     end=getattr(h.node, "end_char_idx", None), score=h.score,
                     summary=h.node.metadata.get("document_summary"), text=h.node.get_content())
            for h in hits]

