"""Round 2's F23/F24 (a Chroma store's HNSW index folder deleted, ``data_level0.bin`` overwritten with random bytes) on
a store of thousands of rows that ``ingest`` wrote (the fake embedding keeps it fast): ``query`` and ``ingest`` each
end in one ``IngestError`` naming the damage, in a process of their own (a crash inside hnswlib would show as a
signal, not kill the test run); damaged upper-level link lists give the intact store's hits or one error, never a
crash. REAL Chroma."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.apps.ingest.test_query_serve import ENV
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb")
pytestmark = pytest.mark.slow

_WORDS = ("party agreement term payment notice law delaware texas indemnity liability licence software confidential "
          "assign terminate breach cure days fees invoice warranty").split()
_QUESTIONS = ("payment notice", "delaware law indemnity", "software licence warranty breach")

_PROBE = """
import sys
from pathlib import Path
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest, query
from tests.conftest import FakeEmbedding
store, docs, what = sys.argv[1:4]
failed = 0
for step in what.split("+"):
    try:
        if step == "query":
            for question in sys.argv[4:]:
                hits = query(question, store, k=50, embed_model=FakeEmbedding())
                print("|".join(f"{h.doc_id}@{h.start}" for h in hits))
        else:
            print(ingest([Path(docs)], store, IngestSettings(show_progress=False), embed_model=FakeEmbedding()).line())
    except IngestError as exc:
        print(f"error: {step}: {exc}", file=sys.stderr)
        failed += 1
sys.exit(2 if failed else 0)
"""


@pytest.fixture(scope="module")
def big_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(docs, store): 10 contracts of 100 clauses ingested into Chroma: about 3,000 rows, past Chroma's sync
    threshold, so the HNSW files are on disk."""
    root = tmp_path_factory.mktemp("big")
    docs = root / "docs"
    docs.mkdir()
    rng = random.Random(0)
    for number in range(10):
        clauses = [f"Clause {number}.{c}. " + " ".join(rng.choice(_WORDS) for _ in range(70)) + "."
                   for c in range(100)]
        (docs / f"contract_{number:02d}.txt").write_text("\n\n".join(clauses), encoding="utf-8")
    report = ingest([docs], f"chroma:{root / 'store'}", IngestSettings(show_progress=False),
                    embed_model=FakeEmbedding())
    assert report.chunks_written > 2000
    return docs, root / "store"


def probe(store: Path, docs: Path, what: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _PROBE, f"chroma:{store}", str(docs), what, *_QUESTIONS],
                          capture_output=True, text=True, env=ENV, timeout=300)


def errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


def index_folder(store: Path) -> Path:
    return next(p for p in store.iterdir() if p.is_dir() and not p.name.startswith("."))


def _random(path: Path) -> None:
    path.write_bytes(np.random.default_rng(1).bytes(path.stat().st_size))


@pytest.mark.parametrize(("damage", "says"), [
    (lambda folder: shutil.rmtree(folder), "its vector index folder {segment}/ is missing"),
    (lambda folder: _random(folder / "data_level0.bin"),
     "its vector index {segment}/ is damaged: data_level0.bin has records with more neighbours"),
    (lambda folder: (folder / "data_level0.bin").write_bytes((folder / "data_level0.bin").read_bytes()[:-100]),
     "its vector index {segment}/ is damaged: data_level0.bin has"),
], ids=["F23-deleted-folder", "F24-random-level0", "truncated-level0"])
def test_a_damaged_index_of_thousands_of_rows_is_one_error(big_store: tuple[Path, Path],
                                                           damage: Callable[[Path], None], says: str,
                                                           tmp_path: Path) -> None:
    docs, intact = big_store
    store = tmp_path / "store"
    shutil.copytree(intact, store)
    folder = index_folder(store)
    damage(folder)
    done = probe(store, docs, "query+ingest")  # each ends in its error, one line each; nothing printed
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr[-2000:])
    assert [line.split(":")[1] for line in errors(done)] == [" query", " ingest"], done.stderr[-2000:]
    assert all(says.format(segment=folder.name) in line for line in errors(done))


def test_damaged_upper_link_lists_give_whole_answers_or_one_error(big_store: tuple[Path, Path],
                                                                  tmp_path: Path) -> None:
    """Noise over ``link_lists.bin`` (the HNSW graph's upper layers) is not detectable from the files' shapes: the
    search then enters the bottom layer elsewhere, and its approximate hits may differ from the intact store's (seen
    on some builds, not on others: the graph depends on insertion threads). What holds: no crash, and either one
    error line or a whole answer of stored chunks per question."""
    docs, intact = big_store
    expected = probe(intact, docs, "query")
    assert expected.returncode == 0 and all(len(line.split("|")) == 50 for line in expected.stdout.splitlines())
    store = tmp_path / "store"
    shutil.copytree(intact, store)
    _random(index_folder(store) / "link_lists.bin")
    done = probe(store, docs, "query")
    assert done.returncode in (0, 2), done.stderr[-2000:]  # never a signal (a crash)
    if done.returncode == 0:
        lines = done.stdout.splitlines()
        assert len(lines) == len(expected.stdout.splitlines()) and all(len(line.split("|")) == 50 for line in lines)
        named = {hit.rsplit("@", 1)[0] for line in lines for hit in line.split("|")}
        stored = {hit.rsplit("@", 1)[0] for line in expected.stdout.splitlines() for hit in line.split("|")}
        assert named <= stored | {p.relative_to(docs.parent).as_posix() for p in docs.rglob("*.txt")}, named
    else:
        assert len(errors(done)) == 1
