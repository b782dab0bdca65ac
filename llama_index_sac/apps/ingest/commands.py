"""The ``llama-sac ingest`` and ``llama-sac query`` commands (registered in :mod:`..cli`); the work is
:func:`~llama_index_sac.apps.ingest.run.ingest` and :func:`~llama_index_sac.apps.ingest.run.query`.

Exit status: 0 when everything was done; 1 when the run completed but some files could not be read or some
summaries failed (each is reported on stderr, the rest is written, the next run retries them); 2 on bad input or
an error (one ``error: ...`` line on stderr, no traceback; ``ingest`` has then written nothing, except after a failure
inside the Ray engine or an interruption, which the next run repairs).
"""

from __future__ import annotations

import json
import logging
import sys
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac.apps._output import for_cli
from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.query import MAX_K, QueryHit, Searcher, check_question
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest
from llama_index_sac.ingestion.pipeline import SummaryFailureWarning
from llama_index_sac.node_parser import RecursiveCharacterNodeParser

__all__ = ["ingest_command", "query_command", "read_questions", "serve_command"]

_TEXT_CHARS = 300  # characters of a chunk shown by `query`
_CHUNK_SIZE = RecursiveCharacterNodeParser.model_fields["chunk_size"].default


def _default(name: str) -> Any:
    return IngestSettings.model_fields[name].default


def _fail(message: str) -> typer.Exit:
    """One ``error:`` line on stderr (further lines indented); the exit with status 2 to raise."""
    first, *rest = message.splitlines() or [""]
    typer.echo("\n".join([f"error: {first}"] + ["  " + line.lstrip() for line in rest]), err=True)
    return typer.Exit(code=2)


def _settings_error(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        message = str(error["msg"]).removeprefix("Value error, ")
        where = error.get("loc") or ()
        parts.append(f"--{str(where[0]).replace('_', '-')}: {message}" if where else message)
    return "; ".join(parts)


def ingest_command(
    paths: Annotated[list[Path], typer.Argument(
        help="Folders (walked recursively) and files: .txt and .md (.pdf and .docx when llama-index-readers-file is "
        "installed).", show_default=False)],
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR (embedded, on disk; "
                                              "created if missing), or chroma-http://HOST:PORT (a Chroma server).",
                                              show_default=False)],
    state_dir: Annotated[Path | None, typer.Option(
        help="chroma-http:// stores: the local folder of the ingest record (default "
        "~/.local/state/llama-sac/chroma-http-HOST-PORT).", show_default=False)] = None,
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _default("collection"),
    engine: Annotated[str, typer.Option(help="local (this process) or ray (Ray Data; RAY_ADDRESS joins a cluster).")]
    = _default("engine"),
    parser: Annotated[str, typer.Option(help="Node parser: recursive, semantic or hybrid.")] = _default("parser"),
    chunk_size: Annotated[int | None, typer.Option(help=f"Chunk size in characters (default: the parser's, "
                                                   f"{_CHUNK_SIZE}).")] = None,
    summarizer: Annotated[str, typer.Option(help="extractive (offline) or llm.")] = _default("summarizer"),
    llm: Annotated[str | None, typer.Option(help="--summarizer llm: OpenAI model name, local .gguf path, or the "
                                            "model served at --llm-api-base.")] = None,
    llm_api_base: Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint for --llm.")] = None,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model: Hugging Face id or local folder "
                                                    "(default all-MiniLM-L6-v2, offline).")] = None,
    workers: Annotated[int | None, typer.Option(help="--engine ray: Ray actors per stage (default: the cluster's "
                                                "CPUs).")] = None,
    batch_documents: Annotated[int, typer.Option(help="Files per round (read, transform, write, save).")]
    = _default("batch_documents"),
    progress: Annotated[bool, typer.Option(help="Progress bars on stderr.")] = True,
) -> None:
    """Ingest folders or files into a vector store (SAC: every chunk embedded with its document's summary). A second
    run processes only new and changed files and removes the rows of files deleted from the folders given."""
    logging.basicConfig(level=logging.WARNING)
    try:
        settings = IngestSettings.model_validate({
            "collection": collection, "engine": engine, "parser": parser, "chunk_size": chunk_size,
            "summarizer": summarizer, "llm": llm, "llm_api_base": llm_api_base, "embed_model": embed_model,
            "workers": workers, "batch_documents": batch_documents, "show_progress": progress,
        })
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SummaryFailureWarning)  # reported per document below
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)  # Qdrant local mode
            report = ingest([str(p) for p in paths], StoreSpec.parse(vector_store, state_dir), settings,
                            log=lambda line: typer.echo(f"warning: {for_cli(line)}", err=True))
    except ValidationError as exc:
        raise _fail(_settings_error(exc)) from None
    except (IngestError, ImportError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:
        raise _fail("interrupted (the next run completes the store)") from None
    typer.echo(f"ingested into {report.line()}")
    if report.skipped or report.failed:
        raise typer.Exit(code=1)


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def read_questions(source: str) -> list[str]:
    """The questions of ``--questions``: a file (``-``: standard input), one question a line, strict UTF-8; blank
    lines are skipped.

    Raises:
        IngestError: the file cannot be read, a line is not UTF-8 text (named by its number), or no question.
    """
    name = "standard input" if source == "-" else source
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        raise IngestError(f"--questions: cannot read {name} ({type(exc).__name__}: {exc.strerror or exc})") from None
    questions = []
    for number, line in enumerate(data.splitlines(), 1):
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise IngestError(f"--questions: {name} line {number} is not UTF-8 text (byte 0x{line[exc.start]:02x} "
                              f"at byte {exc.start + 1})") from None
        if text.strip():
            questions.append(check_question(text.strip(), f"--questions: {name} line {number}"))
    if not questions:
        raise IngestError(f"--questions: {name} holds no question (one question a line)")
    return questions


def _print_hits(hits: list[QueryHit]) -> None:
    for rank, hit in enumerate(hits, 1):
        score = "?" if hit.score is None else f"{hit.score:.4f}"
        pages = "" if hit.pages is None else (f"  page {hit.pages[0]}" if hit.pages[0] == hit.pages[1]
                                              else f"  pages {hit.pages[0]}-{hit.pages[1]}")
        typer.echo(f"{rank}. score {score}  {hit.doc_id}{pages}  characters {hit.start}-{hit.end}")
        typer.echo(f"   summary: {hit.summary if hit.summary is not None else '(none)'}")
        typer.echo(f"   text: {_shorten(hit.text, _TEXT_CHARS)}")


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
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _default("collection"),
    k: Annotated[int, typer.Option("--k", min=1, max=MAX_K, help="Number of chunks per question.")] = 5,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model (default: the one the collection was "
                                                    "ingested with).")] = None,
    document_aware: Annotated[bool, typer.Option(
        "--document-aware", help="Rank with DocumentAwareRetriever: the documents' summaries and names weigh in.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per question and line: the question and "
                                          "its hits (document, pages, start, end, score, summary, text).")] = False,
    progress: Annotated[bool, typer.Option(help="The embedding model's loading bar on stderr.")] = True,
) -> None:
    """Print the top-k chunks of questions: document, pages, character offsets, score, document summary, chunk
    text."""
    logging.basicConfig(level=logging.WARNING)
    try:
        if (question is None) == (questions is None):
            raise IngestError("give one QUESTION or --questions FILE (- for standard input)")
        asked = [check_question(question)] if question is not None else read_questions(str(questions))
        spec = StoreSpec.parse(vector_store, state_dir)
        with warnings.catch_warnings(), Searcher(spec, collection=collection, embed_model_name=embed_model,
                                                 document_aware=document_aware, show_progress=progress) as searcher:
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            if searcher.ingest_in_progress:
                typer.echo(f"an ingest into {searcher.spec} (collection {collection}) is in progress: no chunks yet, "
                           "ask again when it has finished", err=as_json)
            for number, text in enumerate(asked, 1):
                hits = searcher.search(text, k)
                if as_json:
                    typer.echo(json.dumps({"query": text, "k": k, "hits": [h.to_dict() for h in hits]},
                                          ensure_ascii=False))
                    continue
                if len(asked) > 1:
                    typer.echo(f"{'' if number == 1 else chr(10)}Q{number}: {text}")
                if not hits and not searcher.ingest_in_progress:
                    typer.echo("no chunks in the collection")
                _print_hits(hits)
    except (IngestError, ImportError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:
        raise _fail("interrupted") from None


def serve_command(
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR, qdrant:DIR or "
                                              "chroma-http://HOST:PORT, as ingested.", show_default=False)],
    state_dir: Annotated[Path | None, typer.Option(
        help="chroma-http:// stores: the local folder of the ingest record (default "
        "~/.local/state/llama-sac/chroma-http-HOST-PORT).", show_default=False)] = None,
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _default("collection"),
    host: Annotated[str, typer.Option(help="Address to listen on (loopback by default: nothing else reaches it).")]
    = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port (0: a free one, printed).")] = 8765,
    k: Annotated[int, typer.Option("--k", min=1, max=MAX_K, help="Chunks per question when a request has no k.")]
    = 5,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model (default: the one the collection was "
                                                    "ingested with).")] = None,
    document_aware: Annotated[bool, typer.Option(
        "--document-aware", help="Rank with DocumentAwareRetriever (its document index is read once, at start).")
    ] = False,
    progress: Annotated[bool, typer.Option(help="The embedding model's loading bar on stderr.")] = True,
) -> None:
    """Answer questions over HTTP (JSON): POST /query {"query": ..., "k": ...} returns the hits, GET /health the
    collection; the store and the model stay open. Ctrl-C (or SIGTERM) stops it."""
    from llama_index_sac.apps.ingest.serve import QueryServer, run_server

    logging.basicConfig(level=logging.WARNING)

    def ready(address: tuple[str, int]) -> None:
        typer.echo(f"serving {searcher.spec} (collection {collection}) on http://{address[0]}:{address[1]} "
                   "(POST /query, GET /health; Ctrl-C stops)")
        sys.stdout.flush()

    try:
        spec = StoreSpec.parse(vector_store, state_dir)
        try:  # the address first: a port in use is said before the model loads
            server = QueryServer((host, port), None, k)
        except OSError as exc:
            raise IngestError(f"cannot serve on {host}:{port}: {type(exc).__name__}: {exc.strerror or exc}") from None
        try:
            with warnings.catch_warnings(), Searcher(spec, collection=collection, embed_model_name=embed_model,
                                                     document_aware=document_aware,
                                                     show_progress=progress) as searcher:
                warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
                server.searcher = searcher
                run_server(server, ready)
        finally:
            server.server_close()
    except (IngestError, ImportError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    except KeyboardInterrupt:  # while the store or the model was loading
        pass
    typer.echo("stopped", err=True)
