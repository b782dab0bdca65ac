"""LegalBench-RAG loader: both layouts, strict validation (file, test and field named), sampling, corpus scope."""

from __future__ import annotations

import io
import json
import random
import tarfile
from pathlib import Path
from typing import Literal

import pytest
from llama_index.core.schema import MetadataMode

from llama_index_sac.apps.benchmark.datasets.legalbenchrag import (
    LegalBenchRAGError,
    load_legalbenchrag,
    mini_sample,
)
from llama_index_sac.evaluation.metrics import LocatedSpan
from tests.conftest import LEGALBENCH, requires_legalbench

DOCS = {
    "cuad/alpha.txt": "ALPHA LICENSE between Alpha Inc. and Beta LLC. Governing law: Delaware. Term: 2 years.",
    "cuad/beta.txt": "BETA SUPPLY between Beta LLC and Gamma Corp. Governing law: New York. Term: 5 years.",
    "cuad/sub/gamma.txt": "GAMMA AGREEMENT. Nested folder document. Governing law: Texas.",
    "maud/merger.txt": "PLAN OF MERGER among Delta Corp. and Epsilon Inc. Fiduciary out: yes. \u00e9l\u00e8ve",
    "maud/unused.txt": "A maud document no test refers to.",
}


def _snippet(path: str, needle: str) -> dict:
    start = DOCS[path].index(needle)  # building fixtures only; the loader never searches text
    return {"file_path": path, "span": [start, start + len(needle)], "answer": needle}


def _tests() -> dict[str, list[dict]]:
    return {
        "cuad": [
            {"query_id": "cuad-0", "query": "Governing law of the Alpha license?",
             "snippets": [_snippet("cuad/alpha.txt", "Governing law: Delaware.")]},
            {"query_id": "cuad-1", "query": "Term of the Beta supply agreement?",
             "snippets": [_snippet("cuad/beta.txt", "Term: 5 years.")]},
            {"query_id": "cuad-2", "query": "Governing law of Gamma?",
             "snippets": [_snippet("cuad/sub/gamma.txt", "Governing law: Texas."),
                          _snippet("cuad/alpha.txt", "Term: 2 years.")]},
        ],
        "maud": [
            {"query_id": "maud-0", "query": "Is there a fiduciary out?",
             "snippets": [_snippet("maud/merger.txt", "Fiduciary out: yes. \u00e9l\u00e8ve")]},
        ],
    }


def make_data(root: Path, *, archive: bool = False, bench_folder: str = "benchmarks", tests=None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    if archive:
        with tarfile.open(root / "corpus.tar.xz", "w:xz") as tar:
            for rel, text in DOCS.items():
                data = text.encode("utf-8")
                info = tarfile.TarInfo(f"corpus/{rel}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    else:
        for rel, text in DOCS.items():
            path = root / "corpus" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
    bench = root / bench_folder
    bench.mkdir(exist_ok=True)
    for name, items in (tests if tests is not None else _tests()).items():
        (bench / f"{name}.json").write_text(json.dumps({"tests": items}), encoding="utf-8")
    return root


@pytest.mark.parametrize("archive", [False, True])
@pytest.mark.parametrize("bench_folder", ["benchmarks", "benchmarks_mini"])
def test_loads_both_layouts(tmp_path, archive, bench_folder):
    root = make_data(tmp_path / "data", archive=archive, bench_folder=bench_folder)
    bench = load_legalbenchrag(root)
    assert bench.datasets == ["cuad", "maud"]
    assert [q.query_id for q in bench.queries] == ["cuad-0", "cuad-1", "cuad-2", "maud-0"]
    # referenced scope: exactly the documents the tests use, read exactly (non-ASCII kept as code points)
    assert set(bench.documents) == {"cuad/alpha.txt", "cuad/beta.txt", "cuad/sub/gamma.txt", "maud/merger.txt"}
    assert bench.documents["maud/merger.txt"] == DOCS["maud/merger.txt"]
    for query in bench.queries:
        for span in query.gold:
            assert isinstance(span, LocatedSpan)
            assert bench.documents[span.doc_id][span.start : span.end]
    q = bench.queries[2]
    assert q.gold_doc_ids == {"cuad/sub/gamma.txt", "cuad/alpha.txt"} and q.dataset == "cuad"
    assert bench.doc_datasets["maud/merger.txt"] == "maud"


@pytest.mark.parametrize("archive", [False, True])
def test_scope_all_adds_distractors_of_selected_datasets_only(tmp_path, archive):
    root = make_data(tmp_path / "d", archive=archive)
    bench = load_legalbenchrag(root, ["maud"], scope="all")
    assert set(bench.documents) == {"maud/merger.txt", "maud/unused.txt"}
    assert {q.dataset for q in bench.queries} == {"maud"}


def test_documents_carry_file_path_ids_and_metadata(tmp_path):
    bench = load_legalbenchrag(make_data(tmp_path / "d"), ["maud"])
    (doc,) = bench.to_documents()
    assert doc.id_ == "maud/merger.txt" and doc.metadata["file_path"] == "corpus/maud/merger.txt"
    assert doc.get_content(metadata_mode=MetadataMode.EMBED) == doc.text  # nothing embedded by default
    (doc,) = bench.to_documents(embed_metadata_keys=["file_path"])
    assert doc.get_content(metadata_mode=MetadataMode.EMBED).startswith("file_path: corpus/maud/merger.txt")


def test_missing_data_dir_and_missing_parts(tmp_path):
    with pytest.raises(LegalBenchRAGError, match="data directory not found"):
        load_legalbenchrag(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LegalBenchRAGError, match="corpus"):
        load_legalbenchrag(tmp_path / "empty")
    root = make_data(tmp_path / "nobench", tests={})
    with pytest.raises(LegalBenchRAGError, match="no benchmark files"):
        load_legalbenchrag(root)


def test_unknown_dataset_lists_available(tmp_path):
    with pytest.raises(LegalBenchRAGError, match=r"unknown dataset\(s\) privacy_qa.*available are cuad, maud"):
        load_legalbenchrag(make_data(tmp_path / "d"), ["privacy_qa"])


def test_malformed_json_names_file_and_position(tmp_path):
    root = make_data(tmp_path / "d")
    (root / "benchmarks" / "cuad.json").write_text('{"tests": [ {"query": "x", }', encoding="utf-8")
    with pytest.raises(LegalBenchRAGError, match=r"cuad\.json: malformed JSON at line 1, column \d+"):
        load_legalbenchrag(root)


def _broken(mutate) -> dict[str, list[dict]]:
    tests = _tests()
    mutate(tests)
    return tests


@pytest.mark.parametrize(
    ("mutate", "pattern"),
    [
        (lambda t: t["cuad"][1].update(query="   "), r'cuad\.json: test #1 \(query_id \'cuad-1\'\): field "query"'),
        (lambda t: t["cuad"][1].pop("query"), r'test #1 .*field "query": missing'),
        (lambda t: t["cuad"][0].update(snippets=[]), r'test #0 .*field "snippets": a test needs at least one'),
        (lambda t: t["cuad"][0]["snippets"][0].update(file_path="cuad/ghost.txt"),
         r'test #0 .*field "snippets\[0\]\.file_path": unknown document \'cuad/ghost\.txt\''),
        (lambda t: t["cuad"][0]["snippets"][0].update(span=[0, 10_000]),
         r'field "snippets\[0\]\.span": \[0, 10000\] is out of range for \'cuad/alpha\.txt\' \(\d+ characters\)'),
        (lambda t: t["cuad"][0]["snippets"][0].update(span=[5, 3]),
         r'field "snippets\[0\]\.span": expected 0 <= start'),
        (lambda t: t["cuad"][0]["snippets"][0].update(span=[1.0, 3]),
         r'"snippets\[0\]\.span": expected \[start, end\]'),
        (lambda t: t["cuad"][2]["snippets"][1].update(answer="Term: 3 years."),
         r'test #2 \(query_id \'cuad-2\'\): field "snippets\[1\]\.answer": the corpus and the answer differ from '
         r"character \d+ \(offset \d+ of the span; lengths \d+ and 14\): corpus '.*' vs answer '.*Term: 3 years\.' "
         r"in 'cuad/alpha\.txt'"),
        (lambda t: t["cuad"][1].update(query_id="cuad-0"), r'test #1 .*field "query_id": duplicate'),
        (lambda t: t["cuad"].append("not a test"), r"test #3: expected an object"),
    ],
)
def test_validation_errors_name_file_test_and_field(tmp_path, mutate, pattern):
    root = make_data(tmp_path / "d", tests=_broken(mutate))
    with pytest.raises(LegalBenchRAGError, match=pattern):
        load_legalbenchrag(root)


def test_all_problems_reported_at_once_nothing_loaded(tmp_path):
    def mutate(t):
        t["cuad"][0]["snippets"][0]["answer"] = "wrong"
        t["maud"][0]["query"] = ""

    root = make_data(tmp_path / "d", tests=_broken(mutate))
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    assert len(info.value.problems) == 2
    assert "maud.json" in str(info.value) and "cuad.json" in str(info.value)


def test_missing_tests_field(tmp_path):
    root = make_data(tmp_path / "d")
    (root / "benchmarks" / "maud.json").write_text('{"items": []}', encoding="utf-8")
    with pytest.raises(LegalBenchRAGError, match=r'maud\.json: field "tests"'):
        load_legalbenchrag(root)


def test_query_id_defaults_to_dataset_and_index(tmp_path):
    tests = _tests()
    for test in tests["cuad"]:
        del test["query_id"]
    bench = load_legalbenchrag(make_data(tmp_path / "d", tests=tests), ["cuad"])
    assert [q.query_id for q in bench.queries] == ["cuad-0", "cuad-1", "cuad-2"]


def test_mini_recipe_groups_by_document_and_matches_reference(tmp_path):
    # reference: LegalBench-RAG's benchmark code, restated
    tests = [{"snippets": [{"file_path": f"doc{i % 5}.txt"}]} for i in range(40)]

    def reference(items, size):
        keyed = []
        for i, test in enumerate(items):
            random.seed(test["snippets"][0]["file_path"])
            keyed.append((random.random(), i))
        return [i for _, i in sorted(keyed, key=lambda pair: pair[0])][:size]

    assert mini_sample(tests, 12) == reference(tests, 12)
    chosen_docs = [tests[i]["snippets"][0]["file_path"] for i in mini_sample(tests, 16)]
    # tests of one document stay together: 16 tests from 5 documents of 8 tests = 2 whole documents + 0 partial
    assert len(set(chosen_docs)) == 2
    assert mini_sample(tests, 100) == reference(tests, 100)


def test_sampling_protocols(tmp_path):
    root = make_data(tmp_path / "d")
    mini = load_legalbenchrag(root, ["cuad"], sampling="mini", sample_size=2)
    assert len(mini.queries) == 2
    one = load_legalbenchrag(root, ["cuad"], sampling="random", sample_size=2, seed=3)
    two = load_legalbenchrag(root, ["cuad"], sampling="random", sample_size=2, seed=3)
    assert [q.query_id for q in one.queries] == [q.query_id for q in two.queries]
    ids = [q.query_id for q in one.queries]
    assert ids == sorted(ids)  # file order kept
    # referenced scope follows the sample
    assert set(one.documents) == {s.doc_id for q in one.queries for s in q.gold}
    with pytest.raises(LegalBenchRAGError, match="sample_size"):
        load_legalbenchrag(root, sampling="random")
    with pytest.raises(LegalBenchRAGError, match="unknown corpus scope"):
        load_legalbenchrag(root, scope="everything")  # type: ignore[arg-type]


def test_corpus_checks_apply_to_the_selected_tests(tmp_path):
    # a wrong answer in cuad-2: loading all tests fails; a sample without cuad-2 does not read or check it
    def mutate(t):
        t["cuad"][2]["snippets"][0]["answer"] = "nope"

    root = make_data(tmp_path / "d", tests=_broken(mutate))
    with pytest.raises(LegalBenchRAGError, match="cuad-2"):
        load_legalbenchrag(root, ["cuad"])
    seed = next(s for s in range(100) if 2 not in random.Random(s).sample(range(3), 2))
    bench = load_legalbenchrag(root, ["cuad"], sampling="random", sample_size=2, seed=seed)
    assert [q.query_id for q in bench.queries] == ["cuad-0", "cuad-1"]


@requires_legalbench
@pytest.mark.slow
def test_real_shared_mini_benchmark():
    bench = load_legalbenchrag(LEGALBENCH)
    assert bench.datasets == ["contractnli", "cuad", "maud", "privacy_qa"]
    counts = {d: sum(1 for q in bench.queries if q.dataset == d) for d in bench.datasets}
    assert counts == {"contractnli": 194, "cuad": 194, "maud": 194, "privacy_qa": 194}
    assert len(bench.documents) == 72
    assert bench.n_characters > 8_000_000
    # the mini recipe applied to the mini files keeps every test
    again = load_legalbenchrag(LEGALBENCH, ["privacy_qa"], sampling="mini")
    assert {q.query_id for q in again.queries} == {q.query_id for q in bench.queries if q.dataset == "privacy_qa"}


# -- hostile input: nothing outside the corpus is read, every fault is one error naming file, test and field -------

SECRET = "SENTINEL outside the corpus: must never be loaded"


def _with_path(file_path: str, answer: str = SECRET[:8]) -> dict[str, list[dict]]:
    tests = _tests()
    tests["cuad"][1]["snippets"] = [{"file_path": file_path, "span": [0, len(answer)], "answer": answer}]
    return tests


@pytest.mark.parametrize("archive", [False, True])
@pytest.mark.parametrize(
    ("file_path", "why"),
    [
        ("{outside}", "absolute path"),
        ("cuad/../../outside.txt", "climbs out of corpus/ with a '..' component"),
        ("../outside.txt", "climbs out of corpus/"),
        ("cuad/./alpha.txt", "not a normalized relative path"),
        ("cuad//alpha.txt", "not a normalized relative path"),
        ("cuad/alpha.txt/", "not a normalized relative path"),
        (".", "not a normalized relative path"),
        ("cuad/al\x00pha.txt", "contains a NUL character"),
        ("cuad/\ud800.txt", "not valid Unicode (lone surrogate)"),
    ],
)
def test_file_paths_outside_or_not_normalized_are_refused(tmp_path, archive, file_path, why):
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET, encoding="utf-8")  # the answer matches: only the path check can refuse it
    file_path = file_path.format(outside=outside)
    root = make_data(tmp_path / "d", archive=archive, tests=_with_path(file_path))
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    (problem,) = info.value.problems
    assert problem.startswith(f"{root / 'benchmarks' / 'cuad.json'}: test #1 (query_id 'cuad-1'): ")
    assert 'field "snippets[0].file_path": ' in problem and "is refused: " + why in problem
    assert SECRET not in problem


def test_symlinks_are_followed_only_inside_the_corpus(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET, encoding="utf-8")
    root = make_data(tmp_path / "d", tests=_with_path("cuad/escape.txt"))
    (root / "corpus" / "cuad" / "escape.txt").symlink_to(outside)
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    (problem,) = info.value.problems
    assert 'test #1 (query_id \'cuad-1\'): field "snippets[0].file_path": \'cuad/escape.txt\' is refused' in problem
    assert f"resolves outside corpus/ through a symbolic link (to {outside})" in problem
    # a folder link that leaves the corpus is refused the same way
    (root / "corpus" / "cuad" / "far").symlink_to(tmp_path, target_is_directory=True)
    (root / "benchmarks" / "cuad.json").write_text(json.dumps({"tests": _with_path("cuad/far/outside.txt")["cuad"]}))
    with pytest.raises(LegalBenchRAGError, match=r"snippets\[0\]\.file_path\": 'cuad/far/outside\.txt' is refused"):
        load_legalbenchrag(root)
    # a link that stays inside the corpus is followed: the document keeps the linked path as its id
    (root / "corpus" / "cuad" / "alias.txt").symlink_to(root / "corpus" / "cuad" / "beta.txt")
    tests = _tests()
    tests["cuad"][1]["snippets"][0]["file_path"] = "cuad/alias.txt"
    (root / "benchmarks" / "cuad.json").write_text(json.dumps({"tests": tests["cuad"]}))
    bench = load_legalbenchrag(root, ["cuad"])
    assert bench.documents["cuad/alias.txt"] == DOCS["cuad/beta.txt"]


def test_scope_all_refuses_links_leaving_the_corpus_and_survives_loops(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "secret.txt").write_text(SECRET)
    root = make_data(tmp_path / "d")
    (root / "corpus" / "maud" / "loop").symlink_to(root / "corpus" / "maud", target_is_directory=True)
    bench = load_legalbenchrag(root, ["maud"], scope="all")  # the loop is walked once
    assert set(bench.documents) == {"maud/merger.txt", "maud/unused.txt"}
    (root / "corpus" / "maud" / "out").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (root / "corpus" / "maud" / "self.txt").symlink_to(root / "corpus" / "maud" / "self.txt")  # a link loop
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root, ["maud"], scope="all")
    text = "\n".join(info.value.problems)
    assert f"{root / 'corpus' / 'maud' / 'out'}: resolves outside corpus/ through a symbolic link" in text
    assert f"{root / 'corpus' / 'maud' / 'self.txt'}: cannot be resolved" in text
    assert SECRET not in text


def _archive(
    path: Path, members: list[tuple[tarfile.TarInfo, bytes]], mode: Literal["w", "w:gz", "w:bz2", "w:xz"] = "w:xz"
) -> None:
    with tarfile.open(path, mode) as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


@pytest.mark.parametrize(
    ("member", "why"),
    [
        (_member("corpus/../outside.txt"), "climbs out of the archive with a '..' component"),
        (_member("/corpus/cuad/abs.txt"), "has an absolute name"),
        (_member("corpus/cuad/link.txt", tarfile.SYMTYPE, "/etc/passwd"),
         "is a symbolic link to '/etc/passwd' (links are not accepted in a corpus archive)"),
        (_member("corpus/cuad/hard.txt", tarfile.LNKTYPE, "corpus/cuad/alpha.txt"), "is a hard link"),
        (_member("corpus/cuad/fifo", tarfile.FIFOTYPE), "is a device or FIFO"),
        (_member("corpus/cuad/alpha.txt"), "appears twice"),
    ],
)
def test_unsafe_archive_members_reject_the_archive(tmp_path, member, why):
    root = make_data(tmp_path / "d", archive=True)
    good = [(_member(f"corpus/{rel}"), text.encode()) for rel, text in DOCS.items()]
    _archive(root / "corpus.tar.xz", [*good, (member, b"x")])
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    (problem,) = info.value.problems
    assert problem.startswith(f"{root / 'corpus.tar.xz'}: ") and why in problem


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda data: data[: len(data) // 2], "truncated: the compressed data ends before the end-of-stream marker"),
        (lambda data: bytes(random.Random(1).getrandbits(8) for _ in range(4096)), "not a readable tar archive"),
        # past the first block: the damage shows only when the stream's integrity check is read
        (lambda data: data[:-2000] + bytes(b ^ 0x5A for b in data[-2000:-1900]) + data[-1900:], "corrupt xz data"),
        (lambda data: b"", "not a readable tar archive"),
    ],
)
def test_damaged_archive_is_one_error_naming_it(tmp_path, damage, why):
    root = make_data(tmp_path / "d", archive=True)
    archive = root / "corpus.tar.xz"
    noise = random.Random(0).randbytes(20_000)  # incompressible: the damaged bytes land in this member's data
    _archive(archive, [*((_member(f"corpus/{rel}"), text.encode()) for rel, text in DOCS.items()),
                       (_member("corpus/noise.bin"), noise)])
    archive.write_bytes(damage(archive.read_bytes()))
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    assert info.value.problems == [f"{archive}: corpus archive {why}" + info.value.problems[0].split(why, 1)[1]]


@pytest.mark.parametrize(
    ("content", "pattern"),
    [
        ('{"tests": []}', r'cuad\.json: field "tests": empty list'),
        ('{"tests": [' * 100_000, r"cuad\.json: unreadable JSON \(RecursionError"),
        ('{"tests": [{"query": "q", "snippets": [{"span": [0, 1' + "0" * 5000 + "]}]}]}",
         r"cuad\.json: unreadable JSON \(ValueError: .*integer string conversion"),
        (b'{"tests": "\xff"}', r"cuad\.json: not valid UTF-8"),
        ('{"tests": [{"query": "\\ud800?", "snippets": []}]}', r'field "query": not valid Unicode'),
    ],
)
def test_unreadable_benchmark_files(tmp_path, content, pattern):
    root = make_data(tmp_path / "d")
    path = root / "benchmarks" / "cuad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(LegalBenchRAGError, match=pattern):
        load_legalbenchrag(root)


def test_benchmark_entry_that_is_a_folder_and_non_utf8_corpus_file(tmp_path):
    root = make_data(tmp_path / "d")
    (root / "benchmarks" / "odd.json").mkdir()
    with pytest.raises(LegalBenchRAGError, match=r"odd\.json: cannot be read \(Is a directory\)"):
        load_legalbenchrag(root, ["odd"])
    (root / "corpus" / "maud" / "merger.txt").write_bytes(b"\xff\xfe broken")
    with pytest.raises(LegalBenchRAGError, match=r"maud/merger\.txt: not valid UTF-8"):
        load_legalbenchrag(root, ["maud"])


def test_long_hostile_values_are_cut_in_messages(tmp_path):
    root = make_data(tmp_path / "d", tests=_with_path("x" * 10_000))
    with pytest.raises(LegalBenchRAGError) as info:
        load_legalbenchrag(root)
    assert len(str(info.value)) < 400


def test_retrieval_benchmark_checks_its_spans():
    from llama_index_sac.apps.benchmark.datasets.base import BenchmarkQuery, RetrievalBenchmark

    docs = {"a/x.txt": "0123456789"}

    def bench(*gold, qid="q"):
        return RetrievalBenchmark("t", dict(docs), [BenchmarkQuery(qid, "query?", tuple(gold), "a")])

    assert bench(LocatedSpan("a/x.txt", 0, 10)).queries[0].gold == (("a/x.txt", 0, 10),)
    with pytest.raises(ValueError, match=r"gold span \('a/x\.txt', 4, 11\) is outside 'a/x\.txt' \(10 characters\)"):
        bench(LocatedSpan("a/x.txt", 4, 11))
    with pytest.raises(ValueError, match="outside"):
        bench(LocatedSpan("a/x.txt", 5, 4))
    with pytest.raises(TypeError, match="needs a str doc_id and int start/end"):
        bench(LocatedSpan("a/x.txt", 0, True))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a \\(doc_id, start, end\\) LocatedSpan"):
        bench(("a/x.txt", 0))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not in the corpus: \\['b'\\]"):
        bench(LocatedSpan("b", 0, 1))
    with pytest.raises(ValueError, match="duplicate query_id 'q'"):
        RetrievalBenchmark("t", dict(docs), [BenchmarkQuery("q", "1", (), "a"), BenchmarkQuery("q", "2", (), "a")])


def test_archive_member_larger_than_the_cap_is_refused(tmp_path, monkeypatch):
    from llama_index_sac.apps.benchmark.datasets import _corpus

    root = make_data(tmp_path / "d", archive=True)
    assert load_legalbenchrag(root).queries
    monkeypatch.setattr(_corpus, "MAX_MEMBER_BYTES", 40)  # the cap (256 MiB) scaled down to the fixture's documents
    with pytest.raises(LegalBenchRAGError, match=r"unsafe member 'corpus/cuad/alpha\.txt': declares 86 bytes, more "
                       r"than the 40 accepted for one document"):
        load_legalbenchrag(root)


def test_members_each_under_the_cap_but_too_large_together_are_refused(tmp_path, monkeypatch):
    """8 members of NULs, each under the per-member cap: their total passes the total cap (both scaled down 1024
    times from 256 MiB / 1 GiB), so the archive is refused before the last of them is decompressed."""
    from llama_index_sac.apps.benchmark.datasets import _corpus

    root = make_data(tmp_path / "d", archive=True)
    monkeypatch.setattr(_corpus, "MAX_MEMBER_BYTES", 256 * 1024)
    monkeypatch.setattr(_corpus, "MAX_TOTAL_BYTES", 1024 * 1024)
    nul = b"\0" * (250 * 1024)
    _archive(root / "corpus.tar.xz", [*((_member(f"corpus/{rel}"), text.encode()) for rel, text in DOCS.items()),
                                      *((_member(f"corpus/cuad/nul{i}.txt"), nul) for i in range(8))])
    assert (root / "corpus.tar.xz").stat().st_size < 20_000
    with pytest.raises(LegalBenchRAGError, match=r"its members expand to more than 1,048,576 bytes in all \(at "
                       r"'corpus/cuad/nul4\.txt'\): refused as a decompression bomb"):
        load_legalbenchrag(root, scope="all")
    monkeypatch.setattr(_corpus, "MAX_TOTAL_BYTES", 4 * 1024 * 1024)  # under the total: they load
    assert load_legalbenchrag(root, scope="all").queries


def test_padding_after_the_tar_end_is_not_decompressed(tmp_path, monkeypatch):
    """A valid archive followed by 1 GiB of zeros in concatenated xz streams (about 100 KB compressed): refused once
    the tail passes MAX_TAIL_BYTES, without decompressing the rest; the tar's own padding is accepted."""
    import lzma

    root = make_data(tmp_path / "d", archive=True)
    archive = root / "corpus.tar.xz"
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for rel, text in DOCS.items():
            info = tarfile.TarInfo(f"corpus/{rel}")
            info.size = len(text.encode())
            tar.addfile(info, io.BytesIO(text.encode()))
    archive.write_bytes(lzma.compress(raw.getvalue()))
    assert load_legalbenchrag(root).queries  # the tar's record padding after the end marker is fine
    block = lzma.compress(b"\0" * (16 << 20))
    archive.write_bytes(lzma.compress(raw.getvalue()) + block * 64)
    assert archive.stat().st_size < 1 << 20
    with pytest.raises(LegalBenchRAGError, match=r"more than 1,048,576 bytes follow the end of the tar archive"):
        load_legalbenchrag(root)


def test_an_answer_mismatch_shows_where_they_differ() -> None:
    from llama_index_sac.apps.benchmark.datasets.legalbenchrag import answer_mismatch

    message = answer_mismatch("x" * 70 + "five years.", "x" * 70 + "ten years.", 1000)
    assert "from character 1070 (offset 70 of the span; lengths 81 and 80)" in message
    assert "corpus '...xxxxxxxxxxxxxxxfive years.' vs answer '...xxxxxxxxxxxxxxxten years.'" in message
