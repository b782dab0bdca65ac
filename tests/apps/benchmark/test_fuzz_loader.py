"""Fuzzing the LegalBench-RAG loader with hypothesis: random benchmark JSONs and corpora (folder or archive), valid and
corrupted, in temporary folders beside a sentinel file that must never be opened.

Properties, for every input:

* ``load_legalbenchrag`` returns a benchmark or raises :class:`LegalBenchRAGError`: no other exception;
* no file outside the data folder is opened (an audit hook records every ``open``), the sentinel's text never
  appears in a loaded document, and every loaded document id is a normalized corpus path;
* a successful load is complete and exact: every gold span is ``text[start:end] == answer`` of its test, and with
  ``sampling="all"`` every test is there; an input without corruption always loads;
* an error names where each problem is: every problem starts with a path inside the data folder, and a problem of
  one test names the test (``test #i (query_id ...)``) and the field.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from llama_index_sac.apps.benchmark.datasets._corpus import corpus_path_problem
from llama_index_sac.apps.benchmark.datasets.legalbenchrag import LegalBenchRAGError, load_legalbenchrag

SECRET = "SENTINEL-7f3a: text outside the corpus"

_opened: list[str] | None = None


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and _opened is not None and isinstance(args[0], (str, bytes, os.PathLike)):
        _opened.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)  # cannot be removed: it records only while `_opened` is a list

# -- the inputs ------------------------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
HOSTILE_PATHS = [
    "{secret}",  # absolute, to the sentinel
    "../secret.txt",
    "cuad/../../secret.txt",
    "cuad/leak.txt",  # a symlink to the sentinel (folder corpus) / a symlink member (archive)
    "cuad/up/secret.txt",  # through a symlinked folder leaving the corpus
    "cuad//a.txt",
    "./cuad/a.txt",
    "cuad/a.txt/",
    "cuad/\x00a.txt",
    "cuad/\ud800.txt",
    "cuad/" + "x" * 300 + ".txt",
    "cuad/missing.txt",
    "",
]
FIELD_FAULTS = ["file_path", "span", "span_range", "answer", "query", "query_id", "drop_key", "snippets", "test"]
FILE_FAULTS = ["bytes", "cut", "not_tests", "empty_tests", "deep"]
CORPUS_FAULTS = ["leak_link", "up_link", "loop", "not_utf8", "truncate", "garbage", "unsafe_member", "dup_member"]


@dataclass
class Case:
    archive: bool
    docs: dict[str, str]
    tests: dict[str, list[dict[str, Any]]]
    file_faults: dict[str, tuple[str, bytes]] = field(default_factory=dict)
    corpus_faults: list[str] = field(default_factory=list)
    sampling: str = "all"
    sample_size: int | None = None
    scope: str = "referenced"

    @property
    def corrupted(self) -> bool:
        return bool(self.file_faults or self.corpus_faults or any(t.get("_fault") for ts in self.tests.values()
                                                                   for t in ts))


@st.composite
def cases(draw: st.DrawFn) -> Case:
    names = draw(st.lists(st.sampled_from(["cuad/a.txt", "cuad/b.txt", "cuad/sub/c.txt", "maud/d.txt", "maud/e.txt"]),
                          min_size=1, max_size=4, unique=True))
    docs = {name: draw(st.text(min_size=1, max_size=60)) for name in names}
    tests: dict[str, list[dict[str, Any]]] = {}
    for dataset in draw(st.lists(st.sampled_from(["cuad", "maud"]), min_size=1, max_size=2, unique=True)):
        items = []
        for i in range(draw(st.integers(1, 4))):
            snippets = []
            for _ in range(draw(st.integers(1, 2))):
                name = draw(st.sampled_from(names))
                start = draw(st.integers(0, len(docs[name]) - 1))
                end = draw(st.integers(start + 1, len(docs[name])))
                snippets.append({"file_path": name, "span": [start, end], "answer": docs[name][start:end]})
            test: dict[str, Any] = {"query": draw(st.text(min_size=1, max_size=20).filter(str.strip)),
                                    "snippets": snippets}
            if draw(st.booleans()):
                test["query_id"] = f"{dataset}-q{i}"
            if draw(st.integers(0, 3)) == 0:
                _fault(draw, test)
            items.append(test)
        tests[dataset] = items
    file_faults = {}
    if draw(st.integers(0, 5)) == 0:
        dataset = draw(st.sampled_from(sorted(tests)))
        kind = draw(st.sampled_from(FILE_FAULTS))
        file_faults[dataset] = (kind, draw(st.binary(max_size=40)))
    archive = draw(st.booleans())
    faults = draw(st.lists(st.sampled_from(CORPUS_FAULTS), max_size=2, unique=True)) if draw(st.integers(0, 3)) == 0 \
        else []
    sampling = draw(st.sampled_from(["all", "all", "mini", "random"]))
    size = draw(st.integers(1, 3)) if sampling != "all" else None
    return Case(archive, docs, tests, file_faults, faults, sampling, size, draw(st.sampled_from(["referenced", "all"])))


def _fault(draw: st.DrawFn, test: dict[str, Any]) -> None:
    kind = draw(st.sampled_from(FIELD_FAULTS))
    snippet = test["snippets"][0]
    test["_fault"] = kind
    if kind == "file_path":
        snippet["file_path"] = draw(st.sampled_from(HOSTILE_PATHS) | json_values)
        snippet["answer"] = SECRET[: snippet["span"][1] - snippet["span"][0]]  # would match the sentinel's text
    elif kind == "span":
        snippet["span"] = draw(json_values)
    elif kind == "span_range":
        snippet["span"] = [draw(st.integers(-5, 10**4)), draw(st.integers(-5, 10**4))]
    elif kind == "answer":
        snippet["answer"] = draw(json_values | st.just(snippet["answer"] + "!"))
    elif kind in ("query", "query_id"):
        test[kind] = draw(json_values | st.sampled_from(["", "  ", "\ud800"]))
    elif kind == "drop_key":
        del test[draw(st.sampled_from(["query", "snippets"]))]
    elif kind == "snippets":
        test["snippets"] = draw(json_values)
    else:
        test.clear()
        test.update({"_fault": "test", "_value": draw(json_values)})


# -- building the folder -----------------------------------------------------------------------------------------------


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> None:
    with tarfile.open(path, "w:xz", preset=0) as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def _build(base: Path, case: Case) -> Path:
    secret = base / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    root = base / "data"
    (root / "benchmarks").mkdir(parents=True)
    members = [(tarfile.TarInfo(f"corpus/{rel}"), text.encode("utf-8")) for rel, text in case.docs.items()]
    faults = set(case.corpus_faults)
    if case.archive:
        if "unsafe_member" in faults or "leak_link" in faults:
            link = tarfile.TarInfo("corpus/cuad/leak.txt")
            link.type, link.linkname = tarfile.SYMTYPE, str(secret)
            members.append((link, b""))
        if "dup_member" in faults:
            members.append((tarfile.TarInfo(members[0][0].name), b"again"))
        _tar(root / "corpus.tar.xz", members)
        data = (root / "corpus.tar.xz").read_bytes()
        if "truncate" in faults:
            (root / "corpus.tar.xz").write_bytes(data[: len(data) // 2])
        if "garbage" in faults:
            (root / "corpus.tar.xz").write_bytes(SECRET.encode() * 20)
    else:
        for rel, text in case.docs.items():
            (root / "corpus" / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / "corpus" / rel).write_bytes(text.encode("utf-8"))
        (root / "corpus" / "cuad").mkdir(exist_ok=True)
        if "leak_link" in faults:
            (root / "corpus" / "cuad" / "leak.txt").symlink_to(secret)
        if "up_link" in faults:
            (root / "corpus" / "cuad" / "up").symlink_to(base, target_is_directory=True)
        if "loop" in faults:
            (root / "corpus" / "cuad" / "loop.txt").symlink_to(root / "corpus" / "cuad" / "loop.txt")
        if "not_utf8" in faults:
            first = next(iter(case.docs))
            (root / "corpus" / first).write_bytes(b"\xff\xfe" + case.docs[first].encode())
    for dataset, items in case.tests.items():
        clean = [t.get("_value", t) if t.get("_fault") == "test" else {k: v for k, v in t.items() if k != "_fault"}
                 for t in items]
        data = json.dumps({"tests": clean}).encode()
        kind, noise = case.file_faults.get(dataset, ("", b""))
        data = {"bytes": noise, "cut": data[: len(data) // 2], "not_tests": b'{"items": []}',
                "empty_tests": b'{"tests": []}', "deep": b"[" * 20_000}.get(kind, data)
        (root / "benchmarks" / f"{dataset}.json").write_bytes(data)
    return root


# -- the property ------------------------------------------------------------------------------------------------------


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_loader_never_reads_outside_and_fails_only_with_named_problems(case: Case) -> None:
    global _opened
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp).resolve()
        root = _build(base, case)
        _opened = []
        try:
            bench = load_legalbenchrag(root, sampling=case.sampling, sample_size=case.sample_size,  # type: ignore[arg-type]
                                       scope=case.scope)  # type: ignore[arg-type]
        except LegalBenchRAGError as exc:
            bench, problems = None, exc.problems
        finally:
            opened, _opened = _opened, None
        for name in opened:  # the benchmark files, the corpus files or archive: nothing else under `base`
            resolved = Path(name).resolve()
            if resolved.is_relative_to(base):
                assert resolved.is_relative_to(root), f"opened {name} outside the data folder"
        event("error" if bench is None else "loaded")
        if bench is None:
            assert problems
            for problem in problems:
                assert problem.startswith(str(root)), problem
                assert SECRET not in problem
                if ": test #" in problem:
                    assert 'field "' in problem or ": expected an object" in problem, problem
            assert case.corrupted, f"an intact input failed: {problems}"
            return
        for doc_id, text in bench.documents.items():
            assert corpus_path_problem(doc_id) is None and SECRET not in text
            assert case.archive or Path(root / "corpus" / doc_id).resolve().is_relative_to(root / "corpus")
        by_id = {q.query_id: q for q in bench.queries}
        assert len(by_id) == len(bench.queries)
        for dataset, items in case.tests.items():
            if case.sampling == "all":
                assert sum(q.dataset == dataset for q in bench.queries) == len(items)
            for index, test in enumerate(items):
                query = by_id.get(test.get("query_id", f"{dataset}-{index}"))
                if query is None:
                    continue  # not sampled
                assert query.query == test["query"] and len(query.gold) == len(test["snippets"])
                for span, snippet in zip(query.gold, test["snippets"]):
                    assert (span.doc_id, [span.start, span.end]) == (snippet["file_path"], snippet["span"])
                    assert bench.documents[span.doc_id][span.start : span.end] == snippet["answer"]
