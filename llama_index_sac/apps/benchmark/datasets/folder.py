"""A benchmark from a user's own contracts: a folder of documents plus a small questions file.

Each line of the questions file (JSON Lines, UTF-8, a byte order mark at the start accepted) is one question with
the file that answers it and the passage that answers it, quoted from the document::

    {"question": "Which law governs the Acme NDA?", "file": "nda/acme.txt", "quote": "governed by the laws of Delaware"}

``quote`` may be a list of passages (several gold spans); ``occurrence`` (0-based) picks one occurrence of a passage
that appears more than once; ``id`` names the question (default: ``q<line>``); a key given twice in a line is an
error. Offsets are found with
:func:`~llama_index_sac.evaluation.gold_span` (whitespace runs match any whitespace, so a passage copied from a
PDF viewer still matches). Every document of the folder goes into the index, so DRM measures confusion with every
other contract of the collection, as in production.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Any

from llama_index_sac.apps._input import (
    MAX_QUESTIONS_BYTES,
    DuplicateKeyError,
    InputFileError,
    TextInputError,
    read_input_file,
    text_lines,
    unique_keys,
)
from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery, RetrievalBenchmark
from llama_index_sac.apps.ingest.files import SUFFIXES, read_file
from llama_index_sac.apps.ingest.readers import Unreadable
from llama_index_sac.evaluation.locations import gold_span
from llama_index_sac.evaluation.metrics import LocatedSpan

__all__ = ["DOCUMENT_SUFFIXES", "FolderBenchmarkError", "load_folder_benchmark"]

#: Files of the folder read as documents, as ``llama-sac ingest`` reads them: ``.txt``/``.md`` as strict UTF-8,
#: ``.pdf``/``.docx`` as their extracted text (pages joined by a blank line); other files are left out.
DOCUMENT_SUFFIXES = SUFFIXES
#: Largest document read, in bytes.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
_KEYS = {"question", "file", "quote", "occurrence", "id"}


class FolderBenchmarkError(ValueError):
    """The folder or the questions file cannot make a benchmark; the message lists every problem found (file, line,
    field), not only the first."""


def _read_documents(folder: Path) -> dict[str, str]:
    documents: dict[str, str] = {}
    problems: list[str] = []
    for path in sorted(folder.rglob("*")):
        if path.suffix.lower() not in DOCUMENT_SUFFIXES or path.is_symlink() or not path.is_file():
            continue
        doc_id = PurePosixPath(*path.relative_to(folder).parts).as_posix()
        try:
            documents[doc_id] = read_file(path, max_file_bytes=MAX_DOCUMENT_BYTES, doc_id=doc_id).text
        except Unreadable as exc:
            problems.append(f"{doc_id!r}: {exc}")
    if problems:
        raise FolderBenchmarkError(f"folder {str(folder)!r}: " + "; ".join(problems))
    if not documents:
        raise FolderBenchmarkError(f"folder {str(folder)!r} holds no {'/'.join(DOCUMENT_SUFFIXES)} document")
    return documents


def _question(line_no: int, item: Any, documents: dict[str, str], problems: list[str]) -> BenchmarkQuery | None:
    where = f"line {line_no}"
    if not isinstance(item, dict):
        problems.append(f"{where}: expected a JSON object, got {type(item).__name__}")
        return None
    unknown = sorted(set(item) - _KEYS)
    if unknown:
        problems.append(f"{where}: unknown key(s) {unknown} (expected {sorted(_KEYS)})")
    question, file, quotes = item.get("question"), item.get("file"), item.get("quote")
    if not isinstance(question, str) or not question.strip():
        problems.append(f"{where}: 'question' must be a non-empty string")
    if not isinstance(file, str) or file not in documents:
        problems.append(f"{where}: 'file' {file!r:.120} is not a document of the folder"
                        + (" (paths are relative to the folder, with '/')" if isinstance(file, str) else ""))
        file = None
    quote_list = [quotes] if isinstance(quotes, str) else quotes
    if not isinstance(quote_list, list) or not quote_list or not all(isinstance(q, str) for q in quote_list):
        problems.append(f"{where}: 'quote' must be a string or a non-empty list of strings")
        quote_list = []
    occurrence = item.get("occurrence")
    if occurrence is not None and (isinstance(occurrence, bool) or not isinstance(occurrence, int)):
        problems.append(f"{where}: 'occurrence' must be an integer")
        occurrence = None
    query_id = item.get("id", f"q{line_no}")
    if not isinstance(query_id, str) or not query_id:
        problems.append(f"{where}: 'id' must be a non-empty string")
    spans: list[LocatedSpan] = []
    for quote in quote_list:
        if not isinstance(file, str):
            break
        try:
            spans.append(gold_span(documents[file], quote, doc_id=file, occurrence=occurrence,
                                   normalize_whitespace=True))
        except ValueError as exc:
            problems.append(f"{where}: {exc}")
    if len(spans) != len(quote_list) or not spans or not isinstance(question, str) or not isinstance(query_id, str):
        return None
    return BenchmarkQuery(query_id=query_id, query=question, gold=tuple(spans), dataset="")


def load_folder_benchmark(folder: str | Path, questions: str | Path, *, name: str | None = None) -> RetrievalBenchmark:
    """A :class:`RetrievalBenchmark` of every document in ``folder`` and the questions of ``questions``.

    Args:
        folder: the contracts (``.txt`` / ``.md``, strict UTF-8, searched recursively; symbolic links are not
            followed). Document ids are the paths relative to ``folder``, with ``/``.
        questions: the questions file (JSON Lines, see the module docstring).
        name: the dataset's name in the reports (default: the folder's name).

    Returns:
        The benchmark: one dataset, every document of the folder, one query per line.

    Raises:
        FolderBenchmarkError: the folder has no readable document, a document is not UTF-8, the questions file is
            missing, not a regular file, too large, not UTF-8 JSON Lines (the line and byte named), or a line has a
            key twice, a missing or wrong field, a file that is not in the folder, or a quote that is not in its
            document or is ambiguous (the message lists every problem with its line).
    """
    folder, questions = Path(folder), Path(questions)
    if not folder.is_dir():
        raise FolderBenchmarkError(f"contracts folder {str(folder)!r} is not a folder")
    try:
        lines = text_lines(read_input_file(questions.absolute(), MAX_QUESTIONS_BYTES))  # a file named - too
    except FileNotFoundError:
        raise FolderBenchmarkError(f"questions file {str(questions)!r} is not a regular file (no such file)") from None
    except OSError as exc:
        raise FolderBenchmarkError(f"questions file {str(questions)!r} cannot be read ({type(exc).__name__}: "
                                   f"{exc.strerror or exc})") from None
    except InputFileError as exc:
        raise FolderBenchmarkError(f"questions file {str(questions)!r} {exc}") from None
    except TextInputError as exc:
        raise FolderBenchmarkError(f"questions file {str(questions)!r}: {exc}") from None
    documents = _read_documents(folder)
    dataset = name or folder.resolve().name or "folder"
    problems: list[str] = []
    queries: list[BenchmarkQuery] = []
    for line_no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line, object_pairs_hook=unique_keys)
        except DuplicateKeyError as exc:
            problems.append(f"line {line_no}: {exc}")
            continue
        except (json.JSONDecodeError, RecursionError) as exc:
            problems.append(f"line {line_no}: not JSON ({str(exc)[:80]})")
            continue
        query = _question(line_no, item, documents, problems)
        if query is not None:
            queries.append(BenchmarkQuery(query.query_id, query.query, query.gold, dataset))
    counts = Counter(q.query_id for q in queries)
    problems += [f"duplicate id {i!r}" for i in sorted(i for i, n in counts.items() if n > 1)]
    if not queries and not problems:
        problems.append("no question")
    if problems:
        shown = "; ".join(problems[:20]) + (f"; ... ({len(problems) - 20} more)" if len(problems) > 20 else "")
        raise FolderBenchmarkError(f"questions file {str(questions)!r}: {shown}")
    return RetrievalBenchmark(
        name=dataset, documents=documents, queries=queries, doc_datasets=dict.fromkeys(documents, dataset),
        description=f"{len(documents)} documents of {str(folder)!r}, {len(queries)} questions of {questions.name!r}",
    )
