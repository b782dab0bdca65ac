"""The ``llama-sac ingest`` and ``llama-sac query`` commands (registered in :mod:`..cli`); the work is
:func:`~llama_index_sac.apps.ingest.run.ingest` and :func:`~llama_index_sac.apps.ingest.run.query`.

Exit status: 0 when everything was done; 1 when the run completed but some files could not be read or some
summaries failed (each is reported on stderr, the rest is written, the next run retries them); 2 on bad input or
an error (one ``error: ...`` line on stderr, no traceback; ``ingest`` has then written nothing, except after a failure
inside the Ray engine or an interruption, which the next run repairs).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Annotated, Any

import typer
from llama_index.core.bridge.pydantic import ValidationError

from llama_index_sac.apps.ingest.pages import page_label
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest, query
from llama_index_sac.ingestion.pipeline import SummaryFailureWarning
from llama_index_sac.node_parser import RecursiveCharacterNodeParser

__all__ = ["ingest_command", "query_command"]

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
        help="Folders (walked recursively) and files: .txt, .md, .pdf, .docx (the last two with the documents "
        "extra).", show_default=False)],
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR (embedded, on disk; "
                                              "created if missing).", show_default=False)],
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
    max_file_bytes: Annotated[int, typer.Option(help="The most bytes of one file (and what a DOCX unpacks to); a "
                                                "larger file is skipped and reported.")] = _default("max_file_bytes"),
    max_pages: Annotated[int, typer.Option(help="The most pages of one PDF or DOCX; a longer one is skipped and "
                                           "reported.")] = _default("max_pages"),
    progress: Annotated[bool, typer.Option(help="Progress bars on stderr.")] = True,
) -> None:
    """Ingest folders or files into a vector store (SAC: every chunk embedded with its document's summary). A second
    run processes only new and changed files and removes the rows of files deleted from the folders given."""
    logging.basicConfig(level=logging.WARNING)
    try:
        settings = IngestSettings.model_validate({
            "collection": collection, "engine": engine, "parser": parser, "chunk_size": chunk_size,
            "summarizer": summarizer, "llm": llm, "llm_api_base": llm_api_base, "embed_model": embed_model,
            "workers": workers, "batch_documents": batch_documents, "max_file_bytes": max_file_bytes,
            "max_pages": max_pages, "show_progress": progress,
        })
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SummaryFailureWarning)  # reported per document below
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)  # Qdrant local mode
            report = ingest([str(p) for p in paths], vector_store, settings,
                            log=lambda line: typer.echo(f"warning: {line}", err=True))
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


def query_command(
    question: Annotated[str, typer.Argument(help="The question.", show_default=False)],
    vector_store: Annotated[str, typer.Option("--vector-store", help="chroma:DIR or qdrant:DIR, as ingested.",
                                              show_default=False)],
    collection: Annotated[str, typer.Option(help="Collection in the store.")] = _default("collection"),
    k: Annotated[int, typer.Option("--k", help="Number of chunks.")] = 5,
    embed_model: Annotated[str | None, typer.Option(help="Embedding model (default: the one the collection was "
                                                    "ingested with).")] = None,
    document_aware: Annotated[bool, typer.Option(
        "--document-aware", help="Rank with DocumentAwareRetriever: the documents' summaries and names weigh in.")
    ] = False,
    progress: Annotated[bool, typer.Option(help="The embedding model's loading bar on stderr.")] = True,
) -> None:
    """Print the top-k chunks of a question: document, character offsets, score, document summary, chunk text."""
    logging.basicConfig(level=logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", "Payload indexes have no effect", UserWarning)
            hits = query(question, vector_store, collection=collection, k=k, embed_model_name=embed_model,
                         document_aware=document_aware, show_progress=progress)
    except (IngestError, ImportError) as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{type(exc).__name__}: {exc}") from None
    if not hits:
        typer.echo("no chunks in the collection")
    for rank, hit in enumerate(hits, 1):
        score = "?" if hit.score is None else f"{hit.score:.4f}"
        pages = "" if hit.pages is None else f", {page_label(*hit.pages)}"
        typer.echo(f"{rank}. score {score}  {hit.doc_id}{pages}  characters {hit.start}-{hit.end}")
        typer.echo(f"   summary: {hit.summary if hit.summary is not None else '(none)'}")
        typer.echo(f"   text: {_shorten(hit.text, _TEXT_CHARS)}")
