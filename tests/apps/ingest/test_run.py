"""``ingest`` itself (``llama_index_sac.apps.ingest.run``): what it reads and skips, nothing readable as one error with
the store untouched, settings other than the collection's refused before anything is written, and the summary
metadata no document carries reported. REAL Chroma and Qdrant in temporary directories, with the deterministic
counting ``FakeEmbedding``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llama_index_sac.apps.ingest.run import IngestError, ingest, query
from llama_index_sac.apps.ingest.steps import settings_from_options
from llama_index_sac.settings import RecursiveParserSettings
from tests.apps.ingest.test_ingest_cli import per_doc, rows, same_rows, settings, write_contracts
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed")
pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


def test_unreadable_files_are_reported_and_skipped(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 4)
    (docs / "latin1.txt").write_bytes("Vertrag über Geheimhaltung".encode("latin-1"))  # not UTF-8
    (docs / "broken.md").symlink_to(tmp_path / "nowhere.md")  # a broken symbolic link
    (docs / "folder.txt").mkdir()  # a directory named like a file: walked, not read
    (docs / "notes.csv").write_text("a,b", encoding="utf-8")  # another suffix: not ingested
    (docs / ".hidden.txt").write_text("secret", encoding="utf-8")  # hidden: not ingested
    spec = f"qdrant:{tmp_path / 'store'}"
    lines: list[str] = []
    report = ingest([docs], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)

    assert set(report.skipped) == {str(docs / "latin1.txt"), str(docs / "broken.md")}
    assert report.skipped[str(docs / "latin1.txt")].startswith("not UTF-8 text (")
    assert report.skipped[str(docs / "broken.md")] == f"a link to {tmp_path / 'nowhere.md'}, which does not exist"
    assert len(lines) == 2 and all(line.startswith("skipped ") for line in lines)
    assert set(per_doc(rows(spec))) == set(texts) and report.new == 4

    # a file that became unreadable keeps its rows (it was not deleted); nothing else changes
    (tmp_path / sorted(texts)[0]).write_bytes(b"\xff\xfe broken")
    report = ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    assert report.removed == 0 and str(tmp_path / sorted(texts)[0]) in report.skipped
    assert set(per_doc(rows(spec))) == set(texts)


def test_nothing_readable_is_an_error_and_the_store_is_not_touched(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "bad.txt").write_bytes(b"\xc3\x28")
    store = tmp_path / "store"
    with pytest.raises(IngestError, match=r"nothing could be read \(the store was not touched\): .*bad.txt: not UTF-8"):
        ingest([docs], f"chroma:{store}", settings(), embed_model=FakeEmbedding())
    assert not store.exists()
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match="no .txt/.md/.pdf/.docx files in"):
        ingest([tmp_path / "empty"], f"chroma:{store}", settings(), embed_model=FakeEmbedding())
    assert not store.exists()


def test_other_settings_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    write_contracts(tmp_path / "docs", 3)
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    before = rows(spec)
    Path(tmp_path / "docs" / "extra.txt").write_text("A new contract between Alpha Ltd and Beta Inc.", "utf-8")
    with pytest.raises(IngestError, match=r"built with other settings: parser.chunk_size: 500 -> 300\."):
        ingest([tmp_path / "docs"], spec, settings(parser=RecursiveParserSettings(chunk_size=300)),
               embed_model=FakeEmbedding())
    with pytest.raises(IngestError, match=r"embed_model.dim|embed_model.class_name"):
        ingest([tmp_path / "docs"], spec, settings(), embed_model=OtherEmbedding())
    assert same_rows(rows(spec), before)
    with pytest.raises(IngestError, match="was embedded with"):
        query("governing law", spec, embed_model=OtherEmbedding())


class OtherEmbedding(FakeEmbedding):
    @classmethod
    def class_name(cls) -> str:
        return "OtherEmbedding"


def test_summary_metadata_that_no_document_carries_is_reported(tmp_path: Path) -> None:
    write_contracts(tmp_path / "docs", 3)
    lines: list[str] = []
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "docs"], spec, settings_from_options(summary_metadata=["nonexistent_key"], progress=False),
           embed_model=FakeEmbedding(), log=lines.append)
    (line,) = [line for line in lines if "summary metadata" in line]
    assert line.startswith("3 of 3 document(s) carry none of the summary metadata keys ['nonexistent_key']: their "
                           "summaries are content-only (the documents' metadata keys: file_name, file_path, ")
    quiet: list[str] = []  # the default keys: every file has a file_name
    ingest([tmp_path / "docs"], f"chroma:{tmp_path / 'other'}", settings(), embed_model=FakeEmbedding(),
           log=quiet.append)
    assert not [line for line in quiet if "summary metadata" in line]
    content_only: list[str] = []  # no keys asked: nothing to report
    ingest([tmp_path / "docs"], f"chroma:{tmp_path / 'third'}", settings_from_options(summary_metadata=[],
           progress=False), embed_model=FakeEmbedding(), log=content_only.append)
    assert not [line for line in content_only if "summary metadata" in line]
