"""``llama-sac ingest`` and ``llama-sac query``: a user's own folders of contracts into a real vector store, and back.

:func:`ingest` reads files (``.txt``/``.md`` as strict UTF-8; ``.pdf``/``.docx`` page by page; regular files only,
within ``max_file_bytes``/``max_pages``: :mod:`~llama_index_sac.apps.ingest.readers`), one LlamaIndex ``Document`` per
file whose id is its folder's label and its path inside the folder (:mod:`~llama_index_sac.apps.ingest.identity`: stable
when the folder is moved, renamed or reached through a link), parses it, numbers its chunks' pages, writes one summary
per whole document (``SummaryAugmentationTransformation``), embeds every chunk with its summary and writes the rows into
Chroma or Qdrant, with a docstore of document hashes beside the store. A second run processes only new and changed files
(the changed ones' rows are replaced), leaves every other row untouched, and removes the rows of files that disappeared
from the folders given (LlamaIndex's ``DocstoreStrategy.UPSERTS_AND_DELETE``, limited to those folders).

Files are read in rounds of ``batch_documents`` (memory stays bounded by a round); the first readable round opens the
store (:mod:`~llama_index_sac.apps.ingest.writer`), which commits each document on its own as soon as its chunks are
embedded: its rows are written, then the journal records it (:mod:`~llama_index_sac.apps.ingest.journal`), so an
interrupted or killed run loses only the documents in flight, and a document whose rows were being replaced when the
run stopped is written again by the next run instead of being trusted.
``engine="ray"`` runs the transformations on Ray Data (:mod:`~llama_index_sac.apps.ingest.ray_engine`), streaming each
document back as soon as it is embedded, with the same rows. File metadata is the stable part of LlamaIndex's default
(``file_path``: the document id, ``file_name``, ``file_type``, ``file_size``): dates and the absolute path are left
out because the docstore hashes metadata too, and a touch or a move would make every file "changed".

The ingest record beside the store is a cache of what the store holds: each run first checks that the store holds the
rows the record lists (:func:`~llama_index_sac.apps.ingest.store.check_rows`) and writes again the documents it
lacks (those whose files it does not read are taken out of the record, so that it vouches only for rows the store
holds).

This module is the ingest tool's Python API (``docs/ingest.md``): :func:`ingest`, its settings and report, and
:func:`query` (:mod:`~llama_index_sac.apps.ingest.query`), which retrieves the top-k chunks of a question. The CLI
commands are in :mod:`~llama_index_sac.apps.ingest.commands`, ``ls`` and ``rm`` in
:mod:`~llama_index_sac.apps.ingest.manage`; the user guide is ``docs/ingest.md``.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path

from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.schema import Document
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
from llama_index_sac.apps.ingest.identity import load_folders, plan_sources, save_folders
from llama_index_sac.apps.ingest.query import QueryHit, load_model, query
from llama_index_sac.apps.ingest.readers import shown
from llama_index_sac.apps.ingest.report import IngestReport
from llama_index_sac.apps.ingest.steps import (
    IngestSettings,
    build_steps,
    comparable,
    differences,
    fingerprint,
)
from llama_index_sac.apps.ingest.store import check_store_folder
from llama_index_sac.apps.ingest.writer import StoreWriter, open_writer
from llama_index_sac.augmentation.transformation import SummaryAugmentationTransformation

__all__ = ["IngestError", "IngestReport", "IngestSettings", "QueryHit", "StoreSpec", "ingest", "query"]


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
        writer: StoreWriter | None = None
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
                    (held.append if writer is None else say)(f"skipped {shown(path)}: {why_unreadable(exc)}")
            if not documents:
                continue
            if writer is None:  # the first readable round: now the store is opened (and created)
                writer = open_writer(stack, spec, record, settings, steps, embed, embed_model, cache_dir, current,
                                     report, say)
                save_folders(record, sources.folders)
                for line in held:
                    say(line)
            seen.update(d.id_ for d in documents)
            unnamed += sum(not summarizer.folded_metadata(d.metadata) for d in documents)
            carried.update(key for d in documents for key in d.metadata)
            writer.round(documents)
        if writer is None:
            raise IngestError("nothing could be read (the store was not touched): "
                              + "; ".join(f"{p}: {why}" for p, why in report.skipped.items()))
        writer.remove_vanished(sources.folders, sources.walked, seen, forget)
        writer.unrecord_unseen(seen)
        save_document_index(record, writer.vector_store)  # query and serve then need not read every chunk
    if summarizer.metadata_keys and unnamed:
        say(f"{unnamed} of {len(seen)} document(s) carry none of the summary metadata keys "
            f"{list(summarizer.metadata_keys)}: their summaries "
            f"are content-only (the documents' metadata keys: {', '.join(sorted(carried))})")
    if report.empty:
        say(f"no chunk from {len(report.empty)} file(s) without text (empty or whitespace only; recorded, nothing "
            f"written): {', '.join(report.empty)}")
    report.seconds = time.perf_counter() - started
    return report
