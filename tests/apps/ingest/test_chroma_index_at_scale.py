"""Round 2's F23/F24 (a Chroma store's HNSW index folder deleted, ``data_level0.bin`` overwritten with random bytes) and
noise over the upper layers of the graph (``link_lists.bin``, which keeps the index's structure: its hits changed
silently before the checksums) on a store of thousands of rows that ``ingest`` wrote (the fake embedding keeps it
fast): ``query`` and ``ingest`` each end in one ``IngestError`` naming the damage, in a process of their own (a crash
inside hnswlib would show as a signal, not kill the test run). The checksums never raise a false alarm: not after a
re-ingest with changes, an ingest killed mid-run and resumed, or under a reader that stays open (serve). REAL
Chroma."""

from __future__ import annotations

import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from llama_index_sac.apps.ingest.chroma_digest import DIGEST_FILE
from llama_index_sac.apps.ingest.files import RECORD_DIR, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.query import Searcher
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
    (lambda folder: _random(folder / "link_lists.bin"),
     "its vector index file {segment}/link_lists.bin is not the file llama-sac ingest wrote"),
], ids=["F23-deleted-folder", "F24-random-level0", "truncated-level0", "noise-upper-links"])
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


def _change(docs: Path) -> None:
    """One contract of ``docs`` changed, one removed and one added."""
    first = docs / "contract_00.txt"
    first.write_text(first.read_text(encoding="utf-8") + "\n\nClause 0.100. payment notice fees invoice.",
                     encoding="utf-8")
    (docs / "contract_10.txt").write_text((docs / "contract_03.txt").read_text(encoding="utf-8").replace(
        "Clause 3.", "Clause 10."), encoding="utf-8")
    (docs / "contract_09.txt").unlink()


def _unverified(lines: list[str]) -> list[str]:
    return [line for line in lines if "cannot be verified" in line]


def test_no_false_alarm_after_a_reingest_with_changes_under_an_open_reader(big_store: tuple[Path, Path],
                                                                           tmp_path: Path) -> None:
    """A searcher stays open (as serve does) while ingest rewrites the index in this process; the searcher reopens on
    the new generation, and a new process verifies the files: no error, no note."""
    docs = tmp_path / "docs"
    shutil.copytree(big_store[0], docs)
    store = tmp_path / "store"
    ingest([docs], f"chroma:{store}", IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    _change(docs)
    folder = index_folder(store)
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with Searcher(f"chroma:{store}", embed_model=FakeEmbedding(), show_progress=False) as searcher:
        assert searcher.unverified is None and len(searcher.search("payment notice", 10)) == 10
        lines: list[str] = []
        report = ingest([docs], f"chroma:{store}", IngestSettings(show_progress=False),
                        embed_model=FakeEmbedding(), log=lines.append)
        assert (report.new, report.changed, report.removed) == (1, 1, 1) and not _unverified(lines), lines
        assert {p.name: p.read_bytes() for p in folder.iterdir()} != before  # Chroma saved the index again
        assert searcher.refresh() and searcher.unverified is None
        assert len(searcher.search("payment notice", 10)) == 10
    done = probe(store, docs, "query+ingest")
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr[-2000:]
    assert "0 new, 0 changed, 10 unchanged, 0 removed" in done.stdout.splitlines()[-1]


_KILLED = """
import sys, time
from pathlib import Path
from llama_index_sac.apps.ingest.chroma_digest import DIGEST_FILE
from llama_index_sac.apps.ingest.files import RECORD_DIR, IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.query import Searcher
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.conftest import FakeEmbedding

class Slow(FakeEmbedding):  # the identity of FakeEmbedding: the resumed run uses the plain one
    @classmethod
    def class_name(cls):
        return "FakeEmbedding"

    def _vector(self, text):
        time.sleep(0.002)
        return super()._vector(text)

ingest([Path(sys.argv[1])], sys.argv[2], IngestSettings(show_progress=False), embed_model=Slow())
"""


def test_no_false_alarm_after_an_ingest_killed_mid_run_and_resumed(big_store: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    """SIGKILL once 5 of 10 contracts are committed (about 1,500 rows: Chroma has saved the index by then, and the run
    recorded no checksums); the resumed run says the index could not be verified, records it, and then every reader
    verifies it."""
    docs, _ = big_store
    store = tmp_path / "store"
    spec = f"chroma:{store}"
    journal = Journal(IngestRecord(StoreSpec.parse(spec), "llama-sac"))
    child = subprocess.Popen([sys.executable, "-c", _KILLED, str(docs), spec], env=ENV, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while sum("done" in e for e in _entries(journal)) < 5:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child committed nothing in time"
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
        child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    folder = index_folder(store)
    assert (folder / "index_metadata.pickle").is_file()  # an index was persisted by the killed run
    lines: list[str] = []
    report = ingest([docs], spec, IngestSettings(show_progress=False), embed_model=FakeEmbedding(), log=lines.append)
    assert report.unchanged >= 5 and report.new + report.unchanged == 10
    assert _unverified(lines) == [f"the vector index of {spec} (collection 'llama-sac') cannot be verified: the last "
                                  "ingest or rm stopped before it recorded its checksums; this run records them"]
    done = probe(store, docs, "query+ingest")
    assert done.returncode == 0 and done.stderr.strip() == "", done.stderr[-2000:]
    assert "0 new, 0 changed, 10 unchanged, 0 removed" in done.stdout.splitlines()[-1]


def _entries(journal: Journal) -> list[dict[str, object]]:
    try:
        return list(journal.entries())
    except Exception:  # noqa: BLE001 - read while the child appends: try again at the next poll
        return []


def test_a_record_without_checksums_still_queries(big_store: tuple[Path, Path], tmp_path: Path) -> None:
    """A record of an earlier version (no chroma-index.json): query answers as before (with a note), and the next
    ingest records the checksums."""
    docs, intact = big_store
    store = tmp_path / "store"
    shutil.copytree(intact, store)
    (store / RECORD_DIR / "llama-sac" / DIGEST_FILE).unlink()
    done = probe(store, docs, "query")  # whole answers (the hits themselves may differ from one opening to the next:
    assert done.returncode == 0, done.stderr[-2000:]  # Chroma inserts the rows of its log with several threads)
    assert [len(line.split("|")) for line in done.stdout.splitlines()] == [50] * len(_QUESTIONS)
    with Searcher(f"chroma:{store}", embed_model=FakeEmbedding(), show_progress=False) as searcher:
        assert searcher.unverified is not None and "holds no checksums" in searcher.unverified
    lines: list[str] = []
    ingest([docs], f"chroma:{store}", IngestSettings(show_progress=False), embed_model=FakeEmbedding(),
           log=lines.append)
    assert len(_unverified(lines)) == 1 and lines[0].endswith("this run records them")
    with Searcher(f"chroma:{store}", embed_model=FakeEmbedding(), show_progress=False) as searcher:
        assert searcher.unverified is None
