"""Loader for the LegalBench-RAG layout (Pipitone & Alami, arXiv 2408.10343), with strict validation and sampling.

Layout under ``data_dir`` (both variants are accepted)::

    corpus/<dataset>/**.txt        or  corpus.tar.xz   (containing corpus/<dataset>/**.txt)
    benchmarks/<dataset>.json      or  benchmarks_mini/<dataset>.json

A benchmark file is ``{"tests": [{"query_id": str, "query": str, "snippets": [{"file_path": str,
"span": [start, end], "answer": str}, ...]}, ...]}``; ``file_path`` is relative to ``corpus/`` and ``span`` is a
half-open range of Python string indices into the file decoded as UTF-8 (no newline translation). The original
benchmark files carry no ``query_id``; when it is missing the loader uses ``"<dataset>-<index in file>"``, the
scheme of the mini files.

Validation is all-or-nothing: every problem in the selected files (malformed or unreadable JSON, an empty
``"tests"`` list, missing or mistyped field, empty query, text that is not valid Unicode, test without snippets, a
``file_path`` that is refused or unknown, span out of range, ``corpus[start:end] != answer``, duplicate
``query_id``) is collected and reported in one :class:`LegalBenchRAGError` naming the file, the test (index and
``query_id``) and the field; nothing is loaded partially.

Nothing outside the corpus is read. ``file_path`` must be a normalized relative path (``"cuad/x.txt"``: no
absolute path, no ``.``/``..`` component, no ``//``, no NUL); in a ``corpus/`` folder it must also resolve inside
``corpus/`` with symbolic links followed (a link leaving it is refused, one staying inside is followed). A
``corpus.tar.xz`` is read member by member and never extracted; it is rejected as a whole (one error naming the
archive and the member) when a member has an absolute or ``..`` name, is a link or a device, or appears twice, and
when it is truncated, corrupt or not a tar archive. Details: :mod:`llama_index_sac.apps.benchmark.datasets._corpus`.

Sampling protocols (per dataset, applied before validation of the corpus so that only the selected tests matter):

* ``"all"``: every test, in file order.
* ``"mini"``: the LegalBench-RAG-mini recipe (its benchmark code): keep the tests in file order, give each the key
  ``random.seed(test.snippets[0].file_path); random.random()``, stable-sort by that key and keep the first
  ``sample_size`` (default 194), so that a document's tests stay together.
* ``"random"``: a seeded uniform sample of ``sample_size`` tests (``random.Random(seed).sample``), in file order.

Corpus scope: ``"referenced"`` indexes only the documents the selected tests refer to (the SAC paper's setting);
``"all"`` indexes every document of the selected datasets as distractors.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from llama_index_sac.apps.benchmark.datasets._corpus import (
    LegalBenchRAGError,
    LegalBenchRAGLayout,
    corpus_path_problem,
    short_repr,
    valid_unicode,
)
from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery, RetrievalBenchmark
from llama_index_sac.evaluation.metrics import LocatedSpan

__all__ = [
    "LEGALBENCH_DATASETS",
    "MINI_SAMPLE_SIZE",
    "LegalBenchRAGError",
    "LegalBenchRAGLayout",
    "load_legalbenchrag",
    "mini_sample",
]

#: The four LegalBench-RAG datasets.
LEGALBENCH_DATASETS: tuple[str, ...] = ("contractnli", "cuad", "maud", "privacy_qa")
#: Tests per dataset in LegalBench-RAG-mini.
MINI_SAMPLE_SIZE = 194

Sampling = Literal["all", "mini", "random"]
Scope = Literal["referenced", "all"]


def mini_sample(tests: Sequence[dict[str, Any]], size: int = MINI_SAMPLE_SIZE) -> list[int]:
    """Indices of the tests LegalBench-RAG-mini keeps (see the module docstring), in the recipe's order."""

    def key(i: int) -> float:
        return random.Random(tests[i]["snippets"][0]["file_path"]).random()

    return sorted(range(len(tests)), key=key)[:size]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_benchmark(path: Path, problems: list[str]) -> list[Any] | None:
    try:
        data = json.loads(path.read_bytes().decode("utf-8"))
    except json.JSONDecodeError as err:
        problems.append(f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}")
        return None
    except UnicodeDecodeError as err:
        problems.append(f"{path}: not valid UTF-8 ({err})")
        return None
    except OSError as err:
        problems.append(f"{path}: cannot be read ({err.strerror or err})")
        return None
    except (ValueError, RecursionError) as err:  # an integer of more than 4300 digits, nesting too deep
        problems.append(f"{path}: unreadable JSON ({type(err).__name__}: {short_repr(str(err))})")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        problems.append(f'{path}: field "tests": expected an object {{"tests": [...]}} with a list of tests')
        return None
    if not data["tests"]:
        problems.append(f'{path}: field "tests": empty list (a benchmark file needs at least one test)')
        return None
    return list(data["tests"])


def _text_problem(value: Any, missing: str = "missing") -> str | None:
    """Why a required text field is unusable (None when it is a non-blank, valid-Unicode string)."""
    if value is None:
        return missing
    if not isinstance(value, str) or not value.strip():
        return "empty or not a string"
    if not valid_unicode(value):
        return "not valid Unicode (lone surrogate)"
    return None


def _check_snippet(field_where: str, snippet: Any, problems: list[str]) -> bool:
    if not isinstance(snippet, dict):
        problems.append(f'{field_where}": expected an object')
        return False
    ok = True
    file_path = snippet.get("file_path")
    if not isinstance(file_path, str) or not file_path:
        problems.append(f'{field_where}.file_path": missing or not a non-empty string')
        ok = False
    elif (why := corpus_path_problem(file_path)) is not None:
        problems.append(f'{field_where}.file_path": {short_repr(file_path)} is refused: {why}')
        ok = False
    span = snippet.get("span")
    if not (isinstance(span, list) and len(span) == 2 and all(_is_int(v) for v in span)):
        problems.append(f'{field_where}.span": expected [start, end] integers, got {short_repr(span)}')
        ok = False
    elif span[0] < 0 or span[1] <= span[0]:
        problems.append(f'{field_where}.span": expected 0 <= start < end, got {span!r}')
        ok = False
    if not isinstance(snippet.get("answer"), str):
        problems.append(f'{field_where}.answer": missing or not a string')
        ok = False
    return ok


def _check_structure(path: Path, dataset: str, index: int, test: Any, problems: list[str]) -> bool:
    """Shape checks that sampling relies on (snippets[0].file_path); False when the test is unusable."""
    where = f"{path}: test #{index}"
    if not isinstance(test, dict):
        problems.append(f"{where}: expected an object, got {type(test).__name__}")
        return False
    qid = test.get("query_id", f"{dataset}-{index}")
    where = f"{path}: test #{index} (query_id {short_repr(qid)})"
    ok = True
    if "query_id" in test and (why := _text_problem(qid)) is not None:
        problems.append(f'{where}: field "query_id": expected a non-empty string ({why})')
        ok = False
    if (why := _text_problem(test.get("query"))) is not None:
        problems.append(f'{where}: field "query": {why}')
        ok = False
    snippets = test.get("snippets")
    if not isinstance(snippets, list) or not snippets:
        problems.append(
            f'{where}: field "snippets": '
            + ("missing" if snippets is None else "a test needs at least one gold snippet (a list of objects)")
        )
        return False
    checked = [_check_snippet(f'{where}: field "snippets[{j}]', s, problems) for j, s in enumerate(snippets)]
    return ok and all(checked)


def load_legalbenchrag(
    data_dir: str | Path,
    datasets: Sequence[str] | None = None,
    *,
    sampling: Sampling = "all",
    sample_size: int | None = None,
    seed: int = 0,
    scope: Scope = "referenced",
    benchmarks_dir: str | Path | None = None,
) -> RetrievalBenchmark:
    """Load and validate LegalBench-RAG data into a :class:`RetrievalBenchmark`.

    Args:
        data_dir: folder with ``corpus/`` or ``corpus.tar.xz`` and ``benchmarks/`` or ``benchmarks_mini/``.
        datasets: benchmark file stems to load (default: every ``*.json`` found), e.g. ``["cuad", "maud"]``.
        sampling: ``"all"``, ``"mini"`` (LegalBench-RAG-mini recipe) or ``"random"`` (seeded), per dataset.
        sample_size: tests per dataset for ``"mini"`` (default 194) and ``"random"`` (required); a dataset with
            fewer tests keeps them all.
        seed: seed of the ``"random"`` protocol.
        scope: ``"referenced"`` (documents of the selected tests) or ``"all"`` (every document of the datasets).
        benchmarks_dir: explicit benchmark folder (absolute, or relative to ``data_dir``).

    Returns:
        The benchmark; document ids are corpus-relative paths (``"cuad/x.txt"``), query datasets are file stems.

    Raises:
        LegalBenchRAGError: every problem found, each naming the file, test and field (nothing is loaded partially);
            or one problem naming the corpus archive or corpus entry that is unreadable or unsafe.
    """
    if sampling not in ("all", "mini", "random"):
        raise LegalBenchRAGError([f"unknown sampling protocol {sampling!r}: expected all, mini or random"])
    if scope not in ("referenced", "all"):
        raise LegalBenchRAGError([f"unknown corpus scope {scope!r}: expected referenced or all"])
    if sampling == "random" and (sample_size is None or sample_size < 1):
        raise LegalBenchRAGError(["sampling='random' needs a positive sample_size"])
    if sample_size is not None and sample_size < 1:
        raise LegalBenchRAGError([f"sample_size must be positive, got {sample_size}"])
    layout = LegalBenchRAGLayout.find(data_dir, benchmarks_dir)
    available = layout.available_datasets()
    selected = list(dict.fromkeys(datasets)) if datasets else available
    unknown = [d for d in selected if d not in available]
    if unknown:
        raise LegalBenchRAGError(
            [
                f"unknown dataset(s) {', '.join(unknown)} in {layout.benchmarks_dir}: "
                f"available are {', '.join(available)}"
            ]
        )

    problems: list[str] = []
    chosen: list[tuple[Path, str, int, dict[str, Any]]] = []
    for dataset in selected:
        path = layout.benchmarks_dir / f"{dataset}.json"
        tests = _read_benchmark(path, problems)
        if tests is None:
            continue
        usable = [_check_structure(path, dataset, i, t, problems) for i, t in enumerate(tests)]
        if not all(usable):
            continue
        if sampling == "mini":
            indices = mini_sample(tests, sample_size or MINI_SAMPLE_SIZE)
        elif sampling == "random":
            assert sample_size is not None
            count = min(sample_size, len(tests))
            indices = sorted(random.Random(seed).sample(range(len(tests)), count))
        else:
            indices = list(range(len(tests)))
        chosen.extend((path, dataset, i, tests[i]) for i in indices)
    # files with structural problems are left out of `chosen`; the others are still checked against the corpus,
    # so one error lists every problem found

    referenced = {s["file_path"] for _, _, _, t in chosen for s in t["snippets"]}
    # a folder corpus: a file_path may leave corpus/ through a symbolic link; such paths are reported per test and
    # never opened
    unsafe = layout.unsafe_paths(referenced)
    doc_ids = referenced - set(unsafe)
    if scope == "all":
        doc_ids |= set(layout.corpus_files(selected))
    documents = layout.read_documents(doc_ids)

    queries: list[BenchmarkQuery] = []
    seen: dict[str, str] = {}
    for path, dataset, index, test in chosen:
        qid = test.get("query_id", f"{dataset}-{index}")
        where = f"{path}: test #{index} (query_id {short_repr(qid)})"
        if qid in seen:
            problems.append(f'{where}: field "query_id": duplicate of {seen[qid]}')
        seen.setdefault(qid, where)
        gold = []
        for j, snippet in enumerate(test["snippets"]):
            file_path, (start, end), answer = snippet["file_path"], snippet["span"], snippet["answer"]
            field_where = f'{where}: field "snippets[{j}]'
            if file_path in unsafe:
                problems.append(f'{field_where}.file_path": {short_repr(file_path)} is refused: {unsafe[file_path]}')
                continue
            text = documents.get(file_path)
            if text is None:
                problems.append(
                    f'{field_where}.file_path": unknown document {short_repr(file_path)} (not in the corpus)'
                )
                continue
            if end > len(text):
                problems.append(
                    f'{field_where}.span": {[start, end]} is out of range for {short_repr(file_path)} '
                    f"({len(text)} characters)"
                )
                continue
            if text[start:end] != answer:
                problems.append(f'{field_where}.answer": {answer_mismatch(text[start:end], answer, start)} '
                                f"in {short_repr(file_path)}")
                continue
            gold.append(LocatedSpan(file_path, start, end))
        queries.append(BenchmarkQuery(query_id=qid, query=test["query"], gold=tuple(gold), dataset=dataset))
    if problems:
        raise LegalBenchRAGError(problems)
    desc = f"LegalBench-RAG ({layout.benchmarks_dir.name}, sampling={sampling}, scope={scope})"
    return RetrievalBenchmark(
        name="legalbenchrag",
        documents=documents,
        queries=queries,
        doc_datasets={doc_id: PurePosixPath(doc_id).parts[0] for doc_id in documents},
        description=desc,
    )


def answer_mismatch(span_text: str, answer: str, start: int) -> str:
    """Where a span's text and its answer first differ, with 30 characters of each around it (both strings cut at
    the SAME prefix would hide the difference)."""
    i = next((j for j, (a, b) in enumerate(zip(span_text, answer)) if a != b), min(len(span_text), len(answer)))
    lo = max(0, i - 15)

    def around(text: str) -> str:
        return ("..." if lo else "") + repr(text[lo: i + 15])[1:-1] + ("..." if len(text) > i + 15 else "")

    return (f"the corpus and the answer differ from character {start + i} (offset {i} of the span; lengths "
            f"{len(span_text)} and {len(answer)}): corpus '{around(span_text)}' vs answer '{around(answer)}'")
