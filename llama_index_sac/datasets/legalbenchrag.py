"""Loader for the LegalBench-RAG layout (Pipitone & Alami, arXiv 2408.10343), with strict validation and sampling.

Layout under ``data_dir`` (both variants are accepted)::

    corpus/<dataset>/**.txt        or  corpus.tar.xz   (containing corpus/<dataset>/**.txt)
    benchmarks/<dataset>.json      or  benchmarks_mini/<dataset>.json

A benchmark file is ``{"tests": [{"query_id": str, "query": str, "snippets": [{"file_path": str,
"span": [start, end], "answer": str}, ...]}, ...]}``; ``file_path`` is relative to ``corpus/`` and ``span`` is a
half-open range of Python string indices into the file decoded as UTF-8 (no newline translation). The original
benchmark files carry no ``query_id``; when it is missing the loader uses ``"<dataset>-<index in file>"``, the
scheme of the mini files.

Validation is all-or-nothing: every problem in the selected files (malformed JSON, missing or mistyped field, empty
query, test without snippets, unknown ``file_path``, span out of range, ``corpus[start:end] != answer``, duplicate
``query_id``) is collected and reported in one :class:`LegalBenchRAGError` naming the file, the test (index and
``query_id``) and the field; nothing is loaded partially.

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
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from llama_index_sac.datasets.base import BenchmarkQuery, RetrievalBenchmark
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
_MAX_REPORTED = 25

Sampling = Literal["all", "mini", "random"]
Scope = Literal["referenced", "all"]


class LegalBenchRAGError(ValueError):
    """Invalid LegalBench-RAG input: missing files, unknown dataset, malformed benchmark, span/answer mismatch."""

    def __init__(self, problems: Sequence[str]):
        self.problems = list(problems)
        head = self.problems[:_MAX_REPORTED]
        more = len(self.problems) - len(head)
        text = head[0] if len(self.problems) == 1 else f"{len(self.problems)} problems:\n  " + "\n  ".join(head)
        if more:
            text += f"\n  ... and {more} more"
        super().__init__(text)


@dataclass(frozen=True)
class LegalBenchRAGLayout:
    """Where the corpus and the benchmark files of a data directory are (see the module docstring)."""

    data_dir: Path
    corpus_dir: Path | None
    corpus_archive: Path | None
    benchmarks_dir: Path

    @classmethod
    def find(cls, data_dir: str | Path, benchmarks_dir: str | Path | None = None) -> LegalBenchRAGLayout:
        """Locate the corpus and benchmark files; raises :class:`LegalBenchRAGError` naming what is missing."""
        root = Path(data_dir).expanduser()
        if not root.is_dir():
            raise LegalBenchRAGError([f"data directory not found: {root}"])
        corpus_dir = root / "corpus" if (root / "corpus").is_dir() else None
        archive = root / "corpus.tar.xz" if (root / "corpus.tar.xz").is_file() else None
        if corpus_dir is None and archive is None:
            raise LegalBenchRAGError([f"{root}: neither a corpus/ folder nor corpus.tar.xz found"])
        if benchmarks_dir is not None:
            bench = Path(benchmarks_dir).expanduser()
            if not bench.is_absolute() and not bench.is_dir():
                bench = root / bench
            candidates = [bench]
        else:
            candidates = [root / "benchmarks", root / "benchmarks_mini"]
        for bench in candidates:
            if bench.is_dir() and any(bench.glob("*.json")):
                return cls(root, corpus_dir, archive, bench)
        names = " or ".join(str(c) for c in candidates)
        raise LegalBenchRAGError([f"no benchmark files (*.json) found in {names}"])

    def available_datasets(self) -> list[str]:
        return sorted(p.stem for p in self.benchmarks_dir.glob("*.json"))

    def corpus_files(self, datasets: Iterable[str]) -> list[str]:
        """Corpus-relative paths (``"cuad/x.txt"``) of every ``.txt`` document of ``datasets``."""
        wanted = set(datasets)
        if self.corpus_dir is not None:
            out = [
                p.relative_to(self.corpus_dir).as_posix()
                for p in self.corpus_dir.rglob("*.txt")
                if p.is_file() and p.relative_to(self.corpus_dir).parts[0] in wanted
            ]
        else:
            assert self.corpus_archive is not None
            with tarfile.open(self.corpus_archive, "r:*") as tar:
                rels = [_archive_rel(m) for m in tar.getmembers() if m.isfile()]
            out = [rel for rel in rels if rel and rel.endswith(".txt") and PurePosixPath(rel).parts[0] in wanted]
        return sorted(out)

    def read_documents(self, paths: Iterable[str]) -> dict[str, str]:
        """Texts of the given corpus-relative paths (UTF-8, no newline translation); missing ones are left out."""
        wanted = set(paths)
        texts: dict[str, str] = {}
        if self.corpus_dir is not None:
            for name in sorted(wanted):
                path = self.corpus_dir / name
                if path.is_file():
                    texts[name] = _decode(path.read_bytes(), str(path))
            return texts
        assert self.corpus_archive is not None
        with tarfile.open(self.corpus_archive, "r:*") as tar:
            for member in tar:
                rel = _archive_rel(member)
                if rel is not None and rel in wanted and member.isfile():
                    handle = tar.extractfile(member)
                    assert handle is not None
                    texts[rel] = _decode(handle.read(), f"{self.corpus_archive}:{member.name}")
        return dict(sorted(texts.items()))


def _archive_rel(member: tarfile.TarInfo) -> str | None:
    parts = PurePosixPath(member.name).parts
    if parts and parts[0] == ".":
        parts = parts[1:]
    if len(parts) < 2 or parts[0] != "corpus":
        return None
    return PurePosixPath(*parts[1:]).as_posix()


def _decode(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise LegalBenchRAGError([f"{where}: not valid UTF-8 ({err})"]) from None


def mini_sample(tests: Sequence[dict[str, Any]], size: int = MINI_SAMPLE_SIZE) -> list[int]:
    """Indices of the tests LegalBench-RAG-mini keeps (see the module docstring), in the recipe's order."""

    def key(i: int) -> float:
        return random.Random(tests[i]["snippets"][0]["file_path"]).random()

    return sorted(range(len(tests)), key=key)[:size]


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_benchmark(path: Path, problems: list[str]) -> list[Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        problems.append(f"{path}: malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}")
        return None
    except UnicodeDecodeError as err:
        problems.append(f"{path}: not valid UTF-8 ({err})")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("tests"), list):
        problems.append(f'{path}: field "tests": expected an object {{"tests": [...]}} with a list of tests')
        return None
    return list(data["tests"])


def _check_structure(path: Path, dataset: str, index: int, test: Any, problems: list[str]) -> bool:
    """Shape checks that sampling relies on (snippets[0].file_path); False when the test is unusable."""
    where = f"{path}: test #{index}"
    if not isinstance(test, dict):
        problems.append(f"{where}: expected an object, got {type(test).__name__}")
        return False
    qid = test.get("query_id", f"{dataset}-{index}")
    where = f"{path}: test #{index} (query_id {qid!r})"
    ok = True
    if "query_id" in test and (not isinstance(qid, str) or not qid.strip()):
        problems.append(f'{where}: field "query_id": expected a non-empty string')
        ok = False
    query = test.get("query")
    if not isinstance(query, str) or not query.strip():
        problems.append(f'{where}: field "query": ' + ("missing" if query is None else "empty or not a string"))
        ok = False
    snippets = test.get("snippets")
    if not isinstance(snippets, list) or not snippets:
        problems.append(
            f'{where}: field "snippets": '
            + ("missing" if snippets is None else "a test needs at least one gold snippet (a list of objects)")
        )
        return False
    for j, snippet in enumerate(snippets):
        field_where = f'{where}: field "snippets[{j}]'
        if not isinstance(snippet, dict):
            problems.append(f'{field_where}": expected an object')
            ok = False
            continue
        if not isinstance(snippet.get("file_path"), str) or not snippet["file_path"]:
            problems.append(f'{field_where}.file_path": missing or not a non-empty string')
            ok = False
        span = snippet.get("span")
        if not (isinstance(span, list) and len(span) == 2 and all(_is_int(v) for v in span)):
            problems.append(f'{field_where}.span": expected [start, end] integers, got {span!r}')
            ok = False
        elif span[0] < 0 or span[1] <= span[0]:
            problems.append(f'{field_where}.span": expected 0 <= start < end, got {span!r}')
            ok = False
        if not isinstance(snippet.get("answer"), str):
            problems.append(f'{field_where}.answer": missing or not a string')
            ok = False
    return ok


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
        LegalBenchRAGError: every problem found, each naming the file, test and field (nothing is loaded partially).
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
    if scope == "all":
        doc_ids = set(layout.corpus_files(selected)) | referenced
    else:
        doc_ids = referenced
    documents = layout.read_documents(doc_ids)

    queries: list[BenchmarkQuery] = []
    seen: dict[str, str] = {}
    for path, dataset, index, test in chosen:
        qid = test.get("query_id", f"{dataset}-{index}")
        where = f"{path}: test #{index} (query_id {qid!r})"
        if qid in seen:
            problems.append(f'{where}: field "query_id": duplicate of {seen[qid]}')
        seen.setdefault(qid, where)
        gold = []
        for j, snippet in enumerate(test["snippets"]):
            file_path, (start, end), answer = snippet["file_path"], snippet["span"], snippet["answer"]
            field_where = f'{where}: field "snippets[{j}]'
            text = documents.get(file_path)
            if text is None:
                problems.append(f'{field_where}.file_path": unknown document {file_path!r} (not in the corpus)')
                continue
            if end > len(text):
                problems.append(
                    f'{field_where}.span": {[start, end]} is out of range for {file_path!r} ({len(text)} characters)'
                )
                continue
            if text[start:end] != answer:
                problems.append(
                    f'{field_where}.answer": corpus[{start}:{end}] of {file_path!r} is {text[start:end][:60]!r}..., '
                    f"not the answer {answer[:60]!r}..."
                )
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
