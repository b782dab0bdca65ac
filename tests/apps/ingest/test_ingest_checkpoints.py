"""Per-document checkpoints of ``llama-sac ingest`` , with REAL kills: an ingest
runs in a child process (a slowed ``FakeEmbedding``, so it is mid-run when killed), is stopped with SIGKILL or SIGINT
once the journal shows some documents committed, and the next run must embed exactly the documents that were not
committed, and end with the rows of an uninterrupted ingestion. Real Chroma and Qdrant in temporary directories.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.apps.ingest.test_ingest_cli import COLLECTION, node_of, per_doc, rows, same_rows, write_contracts
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed")
pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

REPO = Path(__file__).resolve().parents[3]
CHILD = """
import sys, time, warnings
warnings.simplefilter("ignore")
from tests.conftest import FakeEmbedding
from llama_index_sac.apps.ingest.run import IngestSettings, ingest

calls = [0]

class SlowEmbedding(FakeEmbedding):  # the same identity as FakeEmbedding: the re-run may use the plain one
    @classmethod
    def class_name(cls):
        return "FakeEmbedding"

    def _vector(self, text):
        # slower and slower: the first documents commit within seconds, the rest would take a minute, so a parent
        # starved of CPU on a loaded machine still signals the run in the middle, never after its end
        calls[0] += 1
        time.sleep(0.03 * (1 + calls[0] / 20))
        return super()._vector(text)

print(ingest([sys.argv[1]], sys.argv[2], IngestSettings(show_progress=False), embed_model=SlowEmbedding()).line())
"""


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


def committed(journal: Journal) -> list[str]:
    """The documents the journal says are committed (``done``)."""
    try:
        return [e["done"] for e in journal.entries() if "done" in e]
    except Exception:  # noqa: BLE001 - read while the child appends: try again at the next poll
        return []


def killed_run(docs: Path, spec: str, sig: int, after: int) -> tuple[list[str], int]:
    """Run ingest in a child process and send it ``sig`` once ``after`` documents are committed; (the documents
    committed when it stopped, its exit status)."""
    journal = Journal(IngestRecord(StoreSpec.parse(spec), COLLECTION))
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    # SIGINT as a terminal delivers it: the child must not inherit an ignored SIGINT from the test process
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(docs), spec], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while len(committed(journal)) < after:
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child committed nothing in time"
            time.sleep(0.05)
        child.send_signal(sig)
        child.communicate(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return committed(journal), child.returncode


@pytest.mark.parametrize(("kind", "sig"), [("chroma", signal.SIGKILL),
                                           pytest.param("qdrant", signal.SIGKILL, marks=pytest.mark.slow),
                                           pytest.param("qdrant", signal.SIGINT, marks=pytest.mark.slow)])
@pytest.mark.slow
def test_a_killed_run_loses_only_the_documents_in_flight(kind: str, sig: int, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 24)
    spec = f"{kind}:{tmp_path / 'store'}"
    done, status = killed_run(docs, spec, sig, after=4)
    assert status != 0 and 4 <= len(done) < len(texts), (status, done)  # stopped mid-run, after 4 commits
    assert len(set(done)) == len(done) and set(done) <= set(texts)

    scratch = f"{kind}:{tmp_path / 'scratch'}"
    ingest([docs], scratch, settings(), embed_model=FakeEmbedding())
    expected = rows(scratch)
    chunks = per_doc(expected)

    embed = FakeEmbedding()
    lines: list[str] = []
    report = ingest([docs], spec, settings(), embed_model=embed, log=lines.append)
    assert (report.new, report.unchanged, report.changed, report.removed) == (len(texts) - len(done), len(done), 0, 0)
    todo = set(texts) - set(done)
    assert len(embed.texts_embedded) == report.chunks_written == sum(chunks[d] for d in todo)  # nothing committed
    # is embedded again; a document whose rows were being written when the kill came is written again, and said
    assert len(report.redone) <= 1 and set(report.redone) <= todo
    assert bool(report.redone) == any(line.startswith("1 document(s) were being written") for line in lines)
    assert same_rows(rows(spec), expected)
    assert json.loads((IngestRecord(StoreSpec.parse(spec), COLLECTION).rows_path).read_text()) == dict(chunks)


CRASH = """
import os, sys, warnings
warnings.simplefilter("ignore")
from tests.conftest import FakeEmbedding
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.run import IngestSettings, ingest

append = Journal.append

def crash_before_done(self, **entry):  # the process dies after the document's new rows are in the store
    if entry.get("done") == sys.argv[3]:
        os._exit(9)
    append(self, **entry)

Journal.append = crash_before_done
ingest([sys.argv[1]], sys.argv[2], IngestSettings(show_progress=False), embed_model=FakeEmbedding())
"""


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["chroma", pytest.param("qdrant", marks=pytest.mark.slow)])
def test_a_crash_between_new_rows_and_the_record_then_a_revert_is_repaired(kind: str, tmp_path: Path) -> None:
    """Hostile round 2, F6: a file is edited, the process dies (``os._exit``) after the edit's rows are written but
    before the record vouches for them, the edit is reverted. The record still holds the original hash, so the file
    looks unchanged; the next run must write it again (reported), and no row of the edit may remain."""
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 4)
    spec = f"{kind}:{tmp_path / 'store'}"
    ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    original = rows(spec)
    target = sorted(texts)[1]
    (tmp_path / target).write_text(texts[target].replace("Agreement", "Contract"), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    child = subprocess.run([sys.executable, "-c", CRASH, str(docs), spec, target], cwd=REPO, env=env,
                           capture_output=True, timeout=300)
    assert child.returncode == 9, child.stderr.decode()[-2000:]
    stale = [node_of(r).text for r in rows(spec).values() if r.doc_id == target]
    assert any("Contract" in text for text in stale)  # the edit's rows, under the original hash
    (tmp_path / target).write_text(texts[target], encoding="utf-8")  # reverted

    embed = FakeEmbedding()
    lines: list[str] = []
    report = ingest([docs], spec, settings(), embed_model=embed, log=lines.append)
    assert report.redone == [target] and report.unchanged == 3 and report.new == 1
    assert lines == [f"1 document(s) were being written when the last run stopped: their rows are deleted and they "
                     f"are written again: {target}"]
    assert len(embed.texts_embedded) == per_doc(original)[target]
    assert same_rows(rows(spec), original)  # the original text's rows, exactly


def test_the_journal_skips_a_torn_last_line_and_refuses_a_damaged_one(tmp_path: Path) -> None:
    from llama_index.core.storage.docstore import SimpleDocumentStore

    from llama_index_sac.apps.ingest.files import IngestError
    from llama_index_sac.apps.ingest.journal import replay

    journal = Journal(IngestRecord(StoreSpec.parse(f"chroma:{tmp_path}"), COLLECTION))
    journal.append(write="d/a.txt")
    journal.append(done="d/a.txt", hash="h1", rows=3)
    journal.append(write="d/b.txt")
    journal.append(write="d/c.txt")
    journal.append(forget="d/c.txt")
    with open(journal.path, "a", encoding="utf-8") as handle:
        handle.write('{"done": "d/b.txt", "ha')  # the append a kill cut short
    docstore, counts = SimpleDocumentStore(), {"d/c.txt": 2}
    assert replay(journal.entries(), docstore, counts) == ["d/b.txt"]  # written, never done: not trusted
    assert counts == {"d/a.txt": 3} and docstore.get_document_hash("d/a.txt") == "h1"
    for damage in ("[" * 100_000 + "]" * 100_000 + "\n", '{"done": "x", "hash": "h", "rows": "3"}\n', "nonsense\n"):
        journal.path.write_text('{"write": "d/a.txt"}\n' + damage + '{"write": "d/a.txt"}\n', encoding="utf-8")
        with pytest.raises(IngestError, match=r"journal.jsonl cannot be read \(line 2 is not an entry\); delete"):
            journal.entries()
