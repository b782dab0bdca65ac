"""The ``llama-sac ingest``, ``query``, ``ls`` and ``rm`` commands (registered in :mod:`..cli`); the work is
:func:`~llama_index_sac.apps.ingest.run.ingest`, :func:`~llama_index_sac.apps.ingest.run.query`,
:func:`~llama_index_sac.apps.ingest.manage.list_documents` and :func:`~llama_index_sac.apps.ingest.manage.remove`.

Exit status: 0 when everything was done; 1 when the run completed but some files could not be read, some paths
given no longer exist or some summaries failed (each is reported on stderr, the rest is written, the next run retries
them); 2 on bad input or
an error (one ``error: ...`` line on stderr, no traceback; ``ingest`` has then written nothing, except after a failure
inside the Ray engine or an interruption, which the next run repairs).
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Annotated, Literal

import typer
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac.apps._display import counted, printable
from llama_index_sac.apps._input import InputFileError, TextInputError, read_input_file, text_lines
from llama_index_sac.apps._options import field_default, field_option
from llama_index_sac.apps._output import for_cli
from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.manage import list_documents, remove, shown_id
from llama_index_sac.apps.ingest.pages import page_label
from llama_index_sac.apps.ingest.query import (
    DEFAULT_DOCUMENT_AWARE,
    MAX_K,
    QueryHit,
    Searcher,
    check_question,
    matched_passage,
)
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest
from llama_index_sac.apps.ingest.serve_settings import TOKEN_ENV, ServeSettings, is_loopback
from llama_index_sac.apps.ingest.steps import settings_from_options
from llama_index_sac.embeddings.default import EmbeddingBackendOptions
from llama_index_sac.embeddings.limits import check_embed_limit
from llama_index_sac.ingestion.pipeline import SummaryFailureWarning
from llama_index_sac.settings import LLMSummarizerSettings, RecursiveParserSettings

__all__ = ["ingest_command", "ls_command", "query_command", "read_questions", "rm_command", "serve_command"]

_BACKEND = EmbeddingBackendOptions.model_fields
ParserChoice = Literal["recursive", "semantic", "hybrid"]
SummarizerChoice = Literal["extractive", "llm"]
_COLLECTION: str = field_default(IngestSettings, "collection")
#: What a question longer than the embedding model reads loses (query's warning), and what --document-aware still reads.
_LONG_QUESTION = "the model reads the start of each question"
_LONG_QUESTION_AWARE = "; the documents it names and its words are matched in all of it"


def _fail(message: str) -> typer.Exit:
    """One ``error:`` line on stderr (names escaped by :func:`printable`, so nothing in them starts a line); the exit
    with status 2 to raise."""
    typer.echo(f"error: {printable(message)}", err=True)
    return typer.Exit(code=2)


def _settings_error(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = error.get("loc") or ()
        option = f"--{prefix}{where[0]}".replace("_", "-") if where else ""
        parts.append(f"{option}: {message}" if where else message)
    return "; ".join(parts)


#: What a command reports as one ``error:`` line: bad input (``IngestError``), a missing extra, a file system error.
_EXPECTED = (IngestError, ImportError, OSError)


def _failure(exc: BaseException) -> typer.Exit:
    """The ``error:`` line of an :data:`_EXPECTED` exception (an ``OSError`` names its type).

    Raises:
        BrokenPipeError: ``exc`` itself when it is one (standard output closed by its reader): no ``error:`` line,
            the entry point ends the command quietly (:func:`~llama_index_sac.apps._output.closed_stdout_ends_quietly`).
    """
    if isinstance(exc, BrokenPipeError):
        raise exc
    return _fail(f"{type(exc).__name__}: {exc}" if isinstance(exc, OSError) else str(exc))


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(
        help="Folders (walked recursively) and files: .txt, .md, .pdf, .docx (the last two with the documents "
        "extra).", show_default=False)],
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR (embedded, on disk; "
                                              "created if missing), or chroma-http://HOST:PORT (a Chroma server).",
                                              show_default=False)],
    state_dir: Annotated[Path | None, typer.Option(
        help="chroma-http:// stores: the local folder of the ingest record (default "
        "~/.local/state/llama-sac/chroma-http-HOST-PORT).", show_default=False)] = None,
    collection: Annotated[str | None, field_option(IngestSettings, "collection")] = None,
    engine: Annotated[Literal["local", "ray"] | None, field_option(IngestSettings, "engine")] = None,
    parser: Annotated[ParserChoice | None, field_option(
        IngestSettings, "parser", key="parser.kind", default="recursive")] = None,
    chunk_size: Annotated[int | None, field_option(RecursiveParserSettings, "chunk_size", key="parser.chunk_size")
                          ] = None,
    summarizer: Annotated[SummarizerChoice | None, field_option(
        IngestSettings, "summarizer", key="summarizer.kind", default="extractive")] = None,
    llm: Annotated[str | None, field_option(LLMSummarizerSettings, "model", key="summarizer.model")] = None,
    llm_api_base: Annotated[str | None, field_option(LLMSummarizerSettings, "api_base", key="summarizer.api_base")
                            ] = None,
    summary_metadata: Annotated[str | None, typer.Option(
        help="summarizer.metadata_keys, comma-separated: file metadata folded into each summary, in order, when a "
        "file has it (default: file_name,title; \"\" for content-only summaries).", show_default=False)] = None,
    embed_model: Annotated[str | None, field_option(IngestSettings, "embed_model")] = None,
    embed_backend: Annotated[str | None, field_option(IngestSettings, "embed_backend")] = None,
    embed_precision: Annotated[str | None, field_option(IngestSettings, "embed_precision")] = None,
    embed_threads: Annotated[int | None, field_option(IngestSettings, "embed_threads")] = None,
    device: Annotated[str | None, field_option(IngestSettings, "embed_device", "--device")] = None,
    workers: Annotated[int | None, field_option(IngestSettings, "workers")] = None,
    batch_documents: Annotated[int | None, field_option(IngestSettings, "batch_documents")] = None,
    max_file_bytes: Annotated[int | None, field_option(IngestSettings, "max_file_bytes")] = None,
    max_pages: Annotated[int | None, field_option(IngestSettings, "max_pages")] = None,
    progress: Annotated[bool, field_option(IngestSettings, "show_progress")
                        ] = field_default(IngestSettings, "show_progress"),
    label: Annotated[list[str] | None, typer.Option(
        "--as", help="Folder label of each PATH, one --as per PATH (default: the folder's recorded label, else its "
        "name); documents are identified as LABEL/path-in-folder.", show_default=False)] = None,
) -> None:
    """Ingest folders or files into a vector store (SAC: every chunk embedded with its document's summary). A second
    run processes only new and changed files and removes the rows of files deleted from the folders given."""
    logging.basicConfig(level=logging.WARNING)
    try:
        settings = settings_from_options(
            collection=collection, engine=engine, parser=parser, chunk_size=chunk_size, summarizer=summarizer,
            llm=llm, llm_api_base=llm_api_base, embed_model=embed_model, embed_backend=embed_backend,
            embed_precision=embed_precision, embed_threads=embed_threads, device=device, workers=workers,
            batch_documents=batch_documents, max_file_bytes=max_file_bytes, max_pages=max_pages,
            progress=progress, summary_metadata=None if summary_metadata is None else [
                key.strip() for key in summary_metadata.split(",") if key.strip()])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SummaryFailureWarning)  # reported per document below
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)  # Qdrant local mode
            report = ingest([str(p) for p in paths], StoreSpec.parse(vector_store, state_dir), settings, labels=label,
                            log=lambda line: typer.echo(f"warning: {printable(for_cli(line))}", err=True))
    except _EXPECTED as exc:
        raise _failure(exc) from None
    except KeyboardInterrupt:
        raise _fail("interrupted (the next run completes the store)") from None
    typer.echo(f"ingested into {printable(report.line())}")
    if report.skipped or report.failed or report.missing:
        raise typer.Exit(code=1)


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def read_questions(source: str) -> list[str]:
    """The questions of ``--questions``: a file (``-``: standard input), one question a line, strict UTF-8 (a byte
    order mark at the start accepted, :func:`~llama_index_sac.apps._input.text_lines`); blank lines are skipped.
    The file is read as ``eval --questions`` reads its file (:func:`~llama_index_sac.apps._input.read_input_file`):
    a regular file of at most :data:`~llama_index_sac.apps._input.MAX_QUESTIONS_BYTES` bytes.

    Raises:
        IngestError: the file cannot be read, is not a regular file (a FIFO, a device), is over the size cap, a line
            is not UTF-8 text (named by its number and byte), or no question.
    """
    name = "standard input" if source == "-" else source
    try:
        data = read_input_file(source)
    except InputFileError as exc:
        raise IngestError(f"--questions: {name} {exc}") from None
    except OSError as exc:
        raise IngestError(f"--questions: cannot read {name} ({type(exc).__name__}: {exc.strerror or exc})") from None
    try:
        lines = text_lines(data)
    except TextInputError as exc:
        raise IngestError(f"--questions: {name} {exc}") from None
    questions = []
    for number, text in enumerate(lines, 1):
        if text.strip():
            questions.append(check_question(text.strip(), f"--questions: {name} line {number}"))
    if not questions:
        raise IngestError(f"--questions: {name} holds no question (one question a line)")
    return questions


def _print_hits(hits: list[QueryHit], question: str, max_chars: int | None) -> None:
    for rank, hit in enumerate(hits, 1):
        score = "?" if hit.score is None else f"{hit.score:.4f}"
        pages = "" if hit.pages is None else f", {page_label(*hit.pages)}"
        typer.echo(f"{rank}. score {score}  {printable(shown_id(hit.doc_id))}{pages}  characters {hit.start}-{hit.end}")
        typer.echo(f"   summary: {printable(hit.summary) if hit.summary is not None else '(none)'}")
        typer.echo(f"   text: {printable(matched_passage(hit.text, question, max_chars))}")


def query_command(
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR, qdrant:DIR or "
                                              "chroma-http://HOST:PORT, as ingested.", show_default=False)],
    state_dir: Annotated[Path | None, typer.Option(
        help="chroma-http:// stores: the local folder of the ingest record (default "
        "~/.local/state/llama-sac/chroma-http-HOST-PORT).", show_default=False)] = None,
    question: Annotated[str | None, typer.Argument(help="The question (or --questions).", show_default=False)]
    = None,
    questions: Annotated[str | None, typer.Option(
        "--questions", metavar="FILE", help="Questions, one a line (strict UTF-8; - reads standard input).",
        show_default=False)] = None,
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _COLLECTION,
    k: Annotated[int, typer.Option("--k", min=1, max=MAX_K, help="Number of chunks per question.")] = 5,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model (default: the one the collection was "
                                                    "ingested with).")] = None,
    embed_backend: Annotated[str | None, typer.Option(help=_BACKEND["backend"].description)] = None,
    embed_precision: Annotated[str | None, typer.Option(help="Precision (default: the one the collection was "
                                                        "embedded with).")] = None,
    document_aware: Annotated[bool, typer.Option(
        "--document-aware/--plain", help="Rank with DocumentAwareRetriever (the default: the documents' summaries "
        "and names weigh in), or plain dense retrieval.")] = DEFAULT_DOCUMENT_AWARE,
    max_chars: Annotated[int | None, typer.Option(
        "--max-chars", min=1, help="Show at most this many characters of each chunk: the passage that matched (the "
        "whole sentences around the one that shares the most words with the question, [...] where text is left "
        "out). Default: the whole chunk. --json always gives the whole chunk.", show_default=False)] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per question and line: the question and "
                                          "its hits (document, pages, start, end, score, summary, text).")] = False,
    progress: Annotated[bool, typer.Option(help="The embedding model's loading bar on stderr.")] = True,
) -> None:
    """Print the top-k chunks of questions: document, pages, character offsets, score, document summary, chunk
    text (whole, or the passage that matched with --max-chars)."""
    logging.basicConfig(level=logging.WARNING)
    try:
        options = None
        if embed_backend is not None or embed_precision is not None:
            options = EmbeddingBackendOptions.model_validate(
                {"backend": embed_backend, **({"precision": embed_precision} if embed_precision else {})})
        if (question is None) == (questions is None):
            raise IngestError("give one QUESTION or --questions FILE (- for standard input)")
        asked = [check_question(question)] if question is not None else read_questions(str(questions))
        spec = StoreSpec.parse(vector_store, state_dir)
        with warnings.catch_warnings(), Searcher(spec, collection=collection, embed_model_name=embed_model,
                                                 embed_options=options,
                                                 document_aware=document_aware, show_progress=progress) as searcher:
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            if searcher.unverified:
                typer.echo(f"note: {printable(searcher.unverified)}", err=True)
            if searcher.ingest_in_progress:
                typer.echo(f"an ingest into {searcher.spec} (collection {collection}) is in progress: no chunks yet, "
                           "ask again when it has finished", err=as_json)
            if searcher.embed_model is not None:  # one warning line for the questions the model would cut
                check_embed_limit(asked, searcher.embed_model, what="questions",
                                  advice=_LONG_QUESTION + (_LONG_QUESTION_AWARE if document_aware else ""))
            for number, text in enumerate(asked, 1):
                hits = searcher.search(text, k)
                if as_json:
                    typer.echo(json.dumps({"query": text, "k": k, "hits": [h.to_dict() for h in hits]},
                                          ensure_ascii=False))
                    continue
                if len(asked) > 1:
                    typer.echo(f"{'' if number == 1 else chr(10)}Q{number}: {printable(text)}")
                if not hits and not searcher.ingest_in_progress:
                    typer.echo("no chunks in the collection")
                _print_hits(hits, text, max_chars)
    except ValidationError as exc:
        raise _fail(_settings_error(exc, prefix="embed_")) from None
    except _EXPECTED as exc:
        raise _failure(exc) from None
    except KeyboardInterrupt:
        raise _fail("interrupted") from None


def serve_command(
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR, qdrant:DIR or "
                                              "chroma-http://HOST:PORT, as ingested.", show_default=False)],
    state_dir: Annotated[Path | None, typer.Option(
        help="chroma-http:// stores: the local folder of the ingest record (default "
        "~/.local/state/llama-sac/chroma-http-HOST-PORT).", show_default=False)] = None,
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _COLLECTION,
    host: Annotated[str, field_option(ServeSettings, "host")] = field_default(ServeSettings, "host"),
    port: Annotated[int, field_option(ServeSettings, "port")] = field_default(ServeSettings, "port"),
    allow_host: Annotated[list[str] | None, field_option(ServeSettings, "allow_hosts", "--allow-host",
                                                         default=False)] = None,
    token: Annotated[str | None, field_option(ServeSettings, "token", envvar=TOKEN_ENV, show_default=False,
                                              show_envvar=True)] = None,
    max_connections: Annotated[int, field_option(ServeSettings, "max_connections")]
    = field_default(ServeSettings, "max_connections"),
    read_timeout: Annotated[float, field_option(ServeSettings, "read_timeout")]
    = field_default(ServeSettings, "read_timeout"),
    access_log: Annotated[bool, field_option(ServeSettings, "access_log")] = field_default(ServeSettings, "access_log"),
    log_questions: Annotated[bool, field_option(ServeSettings, "log_questions")]
    = field_default(ServeSettings, "log_questions"),
    k: Annotated[int, typer.Option("--k", min=1, max=MAX_K, help="Chunks per question when a request has no k.")]
    = 5,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model (default: the one the collection was "
                                                    "ingested with).")] = None,
    device: Annotated[str | None, typer.Option(help=_BACKEND["device"].description, show_default=False)] = None,
    document_aware: Annotated[bool, typer.Option(
        "--document-aware/--plain", help="Rank with DocumentAwareRetriever (the default; its document index is "
        "reloaded whenever an ingest or rm changes the collection), or plain dense retrieval.")]
    = DEFAULT_DOCUMENT_AWARE,
    progress: Annotated[bool, typer.Option(help="The embedding model's loading bar on stderr.")] = True,
) -> None:
    """Answer questions over HTTP (JSON): POST /query {"query": ..., "k": ...} returns the hits, GET /health the
    collection; the store and the model stay open. Ctrl-C (or SIGTERM) stops it."""
    from llama_index_sac.apps.ingest.serve import QueryServer, run_server

    logging.basicConfig(level=logging.WARNING)
    try:
        served = ServeSettings(host=host, port=port, allow_hosts=allow_host or [], token=token,
                               max_connections=max_connections, read_timeout=read_timeout, access_log=access_log,
                               log_questions=log_questions)
    except ValidationError as exc:
        raise _fail(_settings_error(exc).replace("--allow-hosts", "--allow-host")) from None

    def ready(address: tuple[str, int]) -> None:
        typer.echo(f"serving {searcher.spec} (collection {collection}) on http://{address[0]}:{address[1]} "
                   "(POST /query, GET /health; Ctrl-C stops)")
        sys.stdout.flush()
        if searcher.unverified:
            typer.echo(f"note: {printable(searcher.unverified)}", err=True)
        if not is_loopback(served.host):
            typer.echo(f"note: listening beyond loopback ({served.host}): every request needs the bearer token, and "
                       "nothing is encrypted: put a TLS reverse proxy in front (docs/security.md)", err=True)

    try:
        try:
            options = None if device is None else EmbeddingBackendOptions(device=device)
        except ValidationError as exc:
            raise _fail(_settings_error(exc)) from None
        spec = StoreSpec.parse(vector_store, state_dir)
        try:  # the address first: a port in use is said before the model loads
            server = QueryServer(served, None, k)
        except OSError as exc:
            raise IngestError(f"cannot serve on {host}:{port}: {type(exc).__name__}: {exc.strerror or exc}") from None
        try:
            with warnings.catch_warnings(), Searcher(spec, collection=collection, embed_model_name=embed_model,
                                                     embed_options=options, document_aware=document_aware,
                                                     show_progress=progress) as searcher:
                warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
                server.searcher = searcher
                run_server(server, ready)
        finally:
            server.server_close()
    except _EXPECTED as exc:
        raise _failure(exc) from None
    except KeyboardInterrupt:  # while the store or the model was loading
        pass
    typer.echo("stopped", err=True)

def ls_command(
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR, as ingested.",
                                              show_default=False)],
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _COLLECTION,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")] = False,
) -> None:
    """List the folder labels and the documents of a collection: id, chunks in the store, summary."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            listing = list_documents(vector_store, collection)
    except _EXPECTED as exc:
        raise _failure(exc) from None
    per_label: dict[str, int] = {}
    for doc in listing.documents:
        per_label[doc.doc_id.partition("/")[0]] = per_label.get(doc.doc_id.partition("/")[0], 0) + 1
    if as_json:
        typer.echo(json.dumps({
            "folders": [{"label": label, "path": f.path, "exists": Path(f.path).is_dir(),
                         "documents": per_label.get(label, 0)} for label, f in sorted(listing.folders.items())],
            "documents": [{"id": d.doc_id, "path": d.path, "chunks": d.chunks, "recorded_chunks": d.recorded,
                           "summary": d.summary, "interrupted": d.interrupted} for d in listing.documents],
        }, ensure_ascii=False, indent=1))
        return
    typer.echo(f"folders ({len(listing.folders)}):")
    for label, folder in sorted(listing.folders.items()):
        gone = "" if Path(folder.path).is_dir() else ", folder missing"
        documents = counted(per_label.get(label, 0), "document")
        typer.echo(f"  {printable(label)}  {printable(folder.path)}  ({documents}{gone})")
    chunks = sum(d.chunks for d in listing.documents)
    typer.echo(f"documents ({len(listing.documents)}, {counted(chunks, 'chunk')}):")
    for doc in listing.documents:
        note = "  (interrupted: written again by the next ingest)" if doc.interrupted else ""
        if not note and doc.recorded is not None and doc.recorded != doc.chunks:
            note = f"  (the ingest record lists {counted(doc.recorded, 'chunk')}: the next ingest repairs it)"
        summary = _shorten(doc.summary, 100) if doc.summary is not None else "(no summary)"
        typer.echo(f"  {printable(shown_id(doc.doc_id))}  {counted(doc.chunks, 'chunk')}  {printable(summary)}{note}")


def rm_command(
    targets: Annotated[list[str], typer.Argument(help="Document ids or folder labels (see llama-sac ls); a folder "
                                                 "inside a label (LABEL/sub) removes the documents under it.",
                                                 show_default=False)],
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR, as ingested.",
                                              show_default=False)],
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _COLLECTION,
) -> None:
    """Remove documents, or all the documents of a folder label, from a collection: rows, docstore and record."""
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            done = remove(targets, vector_store, collection)
    except _EXPECTED as exc:
        raise _failure(exc) from None
    labels = f"; folder label(s) dropped: {printable(', '.join(done.labels))}" if done.labels else ""
    typer.echo(f"removed {len(done.documents)} document(s) ({done.rows} rows) from {vector_store} (collection "
               f"{collection}){labels}")
