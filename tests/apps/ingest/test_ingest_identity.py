"""Document identity in ``llama-sac ingest`` : a document is its folder's label
and its path inside the folder, so a folder reached through a symbolic link, renamed or moved is the same documents
(0 new, 0 duplicates); ``llama-sac ls`` lists them and ``llama-sac rm`` removes them. REAL Chroma and Qdrant in
temporary directories, with the deterministic counting ``FakeEmbedding``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.identity import load_folders
from llama_index_sac.apps.ingest.manage import list_documents, remove
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest
from tests.apps.ingest.test_ingest_cli import COLLECTION, node_of, per_doc, rows, same_rows, write_contracts
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed")
pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")

STORES = ["chroma", "qdrant"]
runner = CliRunner()


def settings(**kw: Any) -> IngestSettings:
    return IngestSettings(show_progress=False, **kw)


def counts(report: Any) -> tuple[int, int, int, int]:
    return report.new, report.changed, report.unchanged, report.removed


def cli(*args: str) -> Any:
    from llama_index_sac.apps.cli import app

    return runner.invoke(app, list(args))


@pytest.mark.parametrize("kind", STORES)
def test_a_folder_through_a_link_renamed_or_moved_is_the_same_documents(kind: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 6)
    spec = f"{kind}:{tmp_path / 'store'}"
    ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    first = rows(spec)
    assert set(per_doc(first)) == set(texts) and all(d.startswith("docs/") for d in texts)
    assert {node_of(r).metadata["file_path"] for r in first.values()} == set(texts)  # no absolute path in the hash

    (tmp_path / "link").symlink_to(docs)  # the same folder through a link, alone and together with its real path
    for paths in ([tmp_path / "link"], [docs, tmp_path / "link"]):
        embed = FakeEmbedding()
        report = ingest(paths, spec, settings(), embed_model=embed)
        assert counts(report) == (0, 0, 6, 0) and embed.texts_embedded == [], paths
        assert same_rows(rows(spec), first)

    (tmp_path / "link").unlink()
    docs.rename(tmp_path / "renamed")  # the same folder (device and inode), another name
    lines: list[str] = []
    embed = FakeEmbedding()
    report = ingest([tmp_path / "renamed"], spec, settings(), embed_model=embed, log=lines.append)
    assert counts(report) == (0, 0, 6, 0) and embed.texts_embedded == [] and same_rows(rows(spec), first)
    assert lines == [f"folder {tmp_path / 'renamed'} is 'docs' (moved from {docs})"]
    record = IngestRecord(StoreSpec.parse(spec), COLLECTION)
    assert load_folders(record)["docs"].path == str(tmp_path / "renamed")

    # copied elsewhere under its name and the original deleted (another inode): the label moves with the name
    shutil.copytree(tmp_path / "renamed", tmp_path / "elsewhere" / "docs")
    shutil.rmtree(tmp_path / "renamed")
    lines.clear()
    report = ingest([tmp_path / "elsewhere" / "docs"], spec, settings(), embed_model=FakeEmbedding(), log=lines.append)
    assert counts(report) == (0, 0, 6, 0) and same_rows(rows(spec), first)
    assert lines == [f"folder label 'docs' moved from {tmp_path / 'renamed'} to {tmp_path / 'elsewhere' / 'docs'}"]

    # a file deleted from the moved folder is removed; a sub-folder given alone keeps the folder's ids
    gone = sorted(texts)[0]
    (tmp_path / "elsewhere" / gone).unlink()
    report = ingest([tmp_path / "elsewhere" / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert counts(report) == (0, 0, 5, 1) and gone not in per_doc(rows(spec))
    sub = tmp_path / "elsewhere" / "docs" / "annex"
    sub.mkdir()
    (sub / "schedule.txt").write_text("SCHEDULE A. Fees payable monthly.", encoding="utf-8")
    report = ingest([sub], spec, settings(), embed_model=FakeEmbedding())
    assert counts(report) == (1, 0, 0, 0) and "docs/annex/schedule.txt" in per_doc(rows(spec))
    report = ingest([tmp_path / "elsewhere" / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert counts(report) == (0, 0, 6, 0)


def test_two_folders_of_one_name_need_a_label(tmp_path: Path) -> None:
    a, b = tmp_path / "a" / "contracts", tmp_path / "b" / "contracts"
    texts_a = write_contracts(a, 3)
    for name, text in list(texts_a.items())[:2]:  # the same file names, other texts
        b.mkdir(parents=True, exist_ok=True)
        (b / Path(name).name).write_text(text + "\n\nSCHEDULE B. Other terms.", encoding="utf-8")
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([a], spec, settings(), embed_model=FakeEmbedding())
    before = rows(spec)
    with pytest.raises(IngestError, match=rf"the label 'contracts' is already the folder {a}, not {b}: give this "
                                          r"one another label with --as NAME"):
        ingest([b], spec, settings(), embed_model=FakeEmbedding())
    with pytest.raises(IngestError, match=r"two folders given would both be labelled 'contracts'"):
        ingest([a, b], f"chroma:{tmp_path / 'other'}", settings(), embed_model=FakeEmbedding())
    assert same_rows(rows(spec), before) and not (tmp_path / "other").exists()
    with pytest.raises(IngestError, match=r"--as: 1 label\(s\) for 2 PATH\(s\)"):
        ingest([a, b], spec, settings(), labels=["x"], embed_model=FakeEmbedding())
    with pytest.raises(IngestError, match=r"--as: 'x/y' is not a folder label"):
        ingest([b], spec, settings(), labels=["x/y"], embed_model=FakeEmbedding())
    with pytest.raises(IngestError, match=rf"{a} was ingested as 'contracts': use --as contracts"):
        ingest([a], spec, settings(), labels=["other"], embed_model=FakeEmbedding())

    report = ingest([a, b], spec, settings(), labels=["contracts", "contracts-b"], embed_model=FakeEmbedding())
    assert counts(report) == (2, 0, 3, 0)
    assert set(per_doc(rows(spec))) == set(texts_a) | {f"contracts-b/{Path(n).name}" for n in list(texts_a)[:2]}
    report = ingest([b], spec, settings(), embed_model=FakeEmbedding())  # recorded: no --as needed any more
    assert counts(report) == (0, 0, 2, 0)


def test_a_missing_folder_is_reported_and_its_documents_kept(tmp_path: Path) -> None:
    texts_a, texts_b = write_contracts(tmp_path / "mv_a", 2), write_contracts(tmp_path / "mv_b", 3)
    spec = f"qdrant:{tmp_path / 'store'}"
    ingest([tmp_path / "mv_a", tmp_path / "mv_b"], spec, settings(), embed_model=FakeEmbedding())
    shutil.rmtree(tmp_path / "mv_a")
    lines: list[str] = []
    report = ingest([tmp_path / "mv_a", tmp_path / "mv_b"], spec, settings(), embed_model=FakeEmbedding(),
                    log=lines.append)
    assert counts(report) == (0, 0, 3, 0) and report.missing == [str(tmp_path / "mv_a")]
    assert lines == [f"{tmp_path / 'mv_a'}: no such folder or file (its documents are kept; llama-sac rm removes "
                     "them)"]
    assert set(per_doc(rows(spec))) == set(texts_a) | set(texts_b) and "1 missing path(s)" in report.line()
    with pytest.raises(IngestError, match=rf"{tmp_path / 'mv_a'}: no such file or folder"):
        ingest([tmp_path / "mv_a"], spec, settings(), embed_model=FakeEmbedding())  # nothing at all to read


@pytest.mark.parametrize("kind", STORES)
def test_ls_and_rm(kind: str, tmp_path: Path) -> None:
    texts_a, texts_b = write_contracts(tmp_path / "a", 3), write_contracts(tmp_path / "b", 2)
    spec = f"{kind}:{tmp_path / 'store'}"
    ingest([tmp_path / "a", tmp_path / "b"], spec, settings(), embed_model=FakeEmbedding())
    table = rows(spec)
    summaries = {r.doc_id: node_of(r).metadata["document_summary"] for r in table.values()}

    result = cli("ls", "--vector-store", spec, "--json")
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert listed["folders"] == [{"label": "a", "path": str(tmp_path / "a"), "exists": True, "documents": 3},
                                 {"label": "b", "path": str(tmp_path / "b"), "exists": True, "documents": 2}]
    assert [(d["id"], d["path"], d["chunks"], d["recorded_chunks"], d["summary"]) for d in listed["documents"]] == [
        (i, str(tmp_path / i), per_doc(table)[i], per_doc(table)[i], summaries[i]) for i in sorted(summaries)]
    result = cli("ls", "--vector-store", spec)
    lines = result.stdout.splitlines()
    assert lines[0] == "folders (2):" and lines[1] == f"  a  {tmp_path / 'a'}  (3 documents)"
    assert lines[3] == f"documents (5, {len(table)} chunks):"
    first = sorted(texts_a)[0]
    assert lines[4].startswith(f"  {first}  {per_doc(table)[first]} chunks  {summaries[first][:40]}")

    result = cli("rm", "nope", "a/missing.txt", "--vector-store", spec)  # unknown: one error, nothing removed
    assert result.exit_code == 2 and result.stderr.startswith("error: nothing removed: no document or folder label "
                                                              "'nope', 'a/missing.txt'")
    assert same_rows(rows(spec), table)
    result = cli("rm", first, "--vector-store", spec)
    assert result.exit_code == 0, result.output
    assert result.stdout == (f"removed 1 document(s) ({per_doc(table)[first]} rows) from {spec} (collection "
                             f"{COLLECTION})\n")
    assert set(per_doc(rows(spec))) == set(texts_a) - {first} | set(texts_b)
    done = remove(["b"], spec)
    assert (sorted(done.documents), done.labels) == (sorted(texts_b), ["b"])
    assert done.rows == sum(per_doc(table)[i] for i in texts_b)
    listing = list_documents(spec)
    assert set(listing.folders) == {"a"} and [d.doc_id for d in listing.documents] == sorted(set(texts_a) - {first})

    # the next run of the folders writes the removed documents again, as new; the record agrees with the store
    embed = FakeEmbedding()
    report = ingest([tmp_path / "a", tmp_path / "b"], spec, settings(), embed_model=embed)
    assert counts(report) == (3, 0, 2, 0) and same_rows(rows(spec), table)
    assert len(embed.texts_embedded) == per_doc(table)[first] + done.rows


def test_cli_as_and_a_missing_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command itself (``--as`` once per PATH; exit status 1 and one warning line for a missing path), with the
    counting embedding in place of the default model."""
    from functools import partial

    from llama_index_sac.apps.ingest import commands

    monkeypatch.setattr(commands, "ingest", partial(ingest, embed_model=FakeEmbedding()))
    write_contracts(tmp_path / "x" / "contracts", 2)
    write_contracts(tmp_path / "y" / "contracts", 2)
    spec = f"chroma:{tmp_path / 'store'}"
    result = cli("ingest", str(tmp_path / "x" / "contracts"), str(tmp_path / "y" / "contracts"), "--as", "x",
                 "--as", "y", "--vector-store", spec, "--no-progress")
    assert result.exit_code == 0, result.output
    assert "documents 4 new, 0 changed, 0 unchanged, 0 removed; " in result.stdout
    assert {d.doc_id.split("/")[0] for d in list_documents(spec).documents} == {"x", "y"}
    result = cli("ingest", str(tmp_path / "x" / "contracts"), "--as", "x", "--as", "z", "--vector-store", spec)
    assert result.exit_code == 2 and result.stderr == "error: --as: 2 label(s) for 1 PATH(s): give one --as per PATH\n"
    shutil.rmtree(tmp_path / "y")
    result = cli("ingest", str(tmp_path / "x" / "contracts"), str(tmp_path / "y" / "contracts"), "--vector-store",
                 spec, "--no-progress")
    assert result.exit_code == 1, result.output
    assert result.stderr == (f"warning: {tmp_path / 'y' / 'contracts'}: no such folder or file (its documents are "
                             "kept; llama-sac rm removes them)\n")
    assert "documents 0 new, 0 changed, 2 unchanged, 0 removed, 1 missing path(s); 0 chunks" in result.stdout
    assert len(list_documents(spec).documents) == 4


def test_ls_and_rm_of_a_missing_store_name_the_store_and_counts_read_in_the_singular(tmp_path: Path) -> None:
    spec = f"chroma:{tmp_path / 'nowhere'}"
    for args in (("ls",), ("rm", "a/x.txt")):
        result = cli(*args, "--vector-store", spec)
        assert (result.exit_code, result.stdout) == (2, ""), args
        assert result.stderr == f"error: --vector-store: {spec} does not exist (nothing was ingested there)\n"
    assert not (tmp_path / "nowhere").exists()

    (tmp_path / "one").mkdir()
    (tmp_path / "one" / "short.txt").write_text("This Agreement is governed by the laws of Delaware.\n",
                                               encoding="utf-8")
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "one"], spec, settings(), embed_model=FakeEmbedding())
    lines = cli("ls", "--vector-store", spec).stdout.splitlines()
    assert lines[1] == f"  one  {tmp_path / 'one'}  (1 document)"
    assert lines[2] == "documents (1, 1 chunk):" and lines[3].startswith("  one/short.txt  1 chunk  ")
