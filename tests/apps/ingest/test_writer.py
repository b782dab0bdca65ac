"""The store side of an ingest run (``llama_index_sac.apps.ingest.writer``): a second run writes only the new and
changed documents and removes those whose files vanished (from the folders given only), a document stopped between
its rows and its record is written again, a failed summary writes nothing and is retried, one run at a time per
collection. REAL Chroma and Qdrant in temporary directories, with the deterministic counting ``FakeEmbedding``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from llama_index.core.schema import MetadataMode

from llama_index_sac.apps.ingest.files import IngestRecord, StoreSpec
from llama_index_sac.apps.ingest.journal import Journal
from llama_index_sac.apps.ingest.run import IngestError, ingest
from llama_index_sac.settings import LLMSummarizerSettings
from llama_index_sac.summarizers import ExtractiveSummarizer
from tests.apps.ingest.test_ingest_cli import (
    COLLECTION,
    STORES,
    node_of,
    per_doc,
    rows,
    same_rows,
    settings,
    write_contracts,
)
from tests.conftest import FakeEmbedding

pytest.importorskip("chromadb", reason="the 'vectorstores' extra is not installed")
pytest.importorskip("qdrant_client", reason="the 'vectorstores' extra is not installed")

pytestmark = pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")


@pytest.mark.parametrize("kind", STORES)
def test_second_run_recomputes_only_the_changed_file_and_removes_the_deleted_one(kind: str, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    texts = write_contracts(docs)
    spec = f"{kind}:{tmp_path / 'store'}"
    ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    before = rows(spec)
    changed, deleted = sorted(texts)[1], sorted(texts)[4]
    new_text = texts[changed][: len(texts[changed]) // 2].rstrip() + "\n\nAMENDMENT. This Agreement ends in 2031."
    (tmp_path / changed).write_text(new_text, encoding="utf-8")
    os.remove(tmp_path / deleted)

    embed = FakeEmbedding()
    report = ingest([docs], spec, settings(), embed_model=embed)

    assert (report.new, report.changed, report.unchanged, report.removed) == (0, 1, 6, 1)
    assert report.summaries == 1  # one summary computed: the changed file's
    after = rows(spec)
    assert deleted not in per_doc(after)
    assert per_doc(after)[changed] == report.chunks_written < per_doc(before)[changed]
    changed_embeds = {node_of(r).get_content(MetadataMode.EMBED) for r in after.values() if r.doc_id == changed}
    assert sorted(embed.texts_embedded) == sorted(changed_embeds)  # nothing else embedded
    for row in after.values():
        if row.doc_id == changed:
            node = node_of(row)
            assert node.text == new_text[node.start_char_idx: node.end_char_idx]
            assert node.metadata["document_summary"] == ExtractiveSummarizer().summarize(
                new_text, {"file_name": Path(changed).name}).summary
    others = {i: r for i, r in before.items() if r.doc_id not in (changed, deleted)}
    assert same_rows({i: r for i, r in after.items() if r.doc_id != changed}, others)  # untouched

    # the same run again: nothing to do; and the result equals a fresh ingestion of the folder as it is now
    again = FakeEmbedding()
    report = ingest([docs], spec, settings(), embed_model=again)
    assert (report.new, report.changed, report.unchanged, report.removed, report.summaries) == (0, 0, 7, 0, 0)
    assert again.texts_embedded == [] and same_rows(rows(spec), after)
    scratch = f"{kind}:{tmp_path / 'scratch'}"
    ingest([docs], scratch, settings(), embed_model=FakeEmbedding())
    assert same_rows(rows(scratch), after)


def test_removal_is_limited_to_the_folders_given(tmp_path: Path) -> None:
    first, second = write_contracts(tmp_path / "a", 4), {}
    second_dir = tmp_path / "b"
    second_dir.mkdir()
    for path, text in list(first.items())[:2]:  # two more contracts under another folder
        target = second_dir / ("copy-" + Path(path).name)
        target.write_text(text + "\nSCHEDULE B.", encoding="utf-8")
        second[f"b/{target.name}"] = text
    spec = f"chroma:{tmp_path / 'store'}"
    ingest([tmp_path / "a"], spec, settings(), embed_model=FakeEmbedding())
    ingest([second_dir], spec, settings(), embed_model=FakeEmbedding())
    assert set(per_doc(rows(spec))) == set(first) | set(second)
    os.remove(tmp_path / next(iter(second)))
    report = ingest([tmp_path / "a"], spec, settings(), embed_model=FakeEmbedding())  # folder b not given
    assert report.removed == 0 and set(per_doc(rows(spec))) == set(first) | set(second)
    report = ingest([second_dir], spec, settings(), embed_model=FakeEmbedding())
    assert report.removed == 1 and set(per_doc(rows(spec))) == set(first) | set(list(second)[1:])


def test_a_document_stopped_between_its_rows_and_its_record_is_written_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A changed file's new rows are written, then the run stops before the journal records them; the edit is
    reverted. The docstore still holds the ORIGINAL text's hash, so the reverted file looks unchanged: the next run
    must not trust it (the rows are the edit's), but delete its rows and write it again, and say so."""
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 4)
    spec = f"qdrant:{tmp_path / 'store'}"
    ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    target = sorted(texts)[2]
    edited = texts[target].replace("Agreement", "Contract")  # the same length class: the same number of chunks
    assert edited != texts[target]
    (tmp_path / target).write_text(edited, encoding="utf-8")
    append = Journal.append

    def stops_before_done(self: Journal, **entry: Any) -> None:
        if entry.get("done") == target:
            raise KeyboardInterrupt
        append(self, **entry)

    monkeypatch.setattr(Journal, "append", stops_before_done)
    with pytest.raises(KeyboardInterrupt):
        ingest([docs], spec, settings(), embed_model=FakeEmbedding())
    monkeypatch.undo()
    assert any("Contract" in (node_of(r).text or "") for r in rows(spec).values() if r.doc_id == target)
    (tmp_path / target).write_text(texts[target], encoding="utf-8")  # the edit reverted

    lines: list[str] = []
    embed = FakeEmbedding()
    report = ingest([docs], spec, settings(), embed_model=embed, log=lines.append)
    assert report.redone == [target] and (report.new, report.changed, report.unchanged) == (1, 0, 3)
    assert lines == [f"1 document(s) were being written when the last run stopped: their rows are deleted and they "
                     f"are written again: {target}"]
    assert "1 written again (interrupted, or rows missing)" in report.line()
    assert len(embed.texts_embedded) == per_doc(rows(spec))[target] == report.chunks_written
    scratch = f"qdrant:{tmp_path / 'scratch'}"
    ingest([docs], scratch, settings(), embed_model=FakeEmbedding())
    assert same_rows(rows(spec), rows(scratch))  # no row of the edit is left
    assert not (IngestRecord(StoreSpec.parse(spec), COLLECTION).directory / "journal.jsonl").exists()


def test_failed_llm_summaries_are_reported_not_written_and_retried_by_the_next_run(tmp_path: Path) -> None:
    """``--summarizer llm`` against a local OpenAI-compatible stand-in (127.0.0.1) that refuses one document."""
    from tests._openai_standin import OpenAIStandIn, answer, status

    docs = tmp_path / "docs"
    texts = write_contracts(docs, 3)
    bad = sorted(texts)[1]
    refused = {"on": True}

    def responder(prompt: str, index: int) -> Any:
        return status(400) if refused["on"] and texts[bad][:120] in prompt else answer("A services contract.")

    spec = f"chroma:{tmp_path / 'store'}"
    lines: list[str] = []
    with OpenAIStandIn(responder=responder) as server:
        options = settings(summarizer=LLMSummarizerSettings(model="served-model", api_base=server.base))
        report = ingest([docs], spec, options, embed_model=FakeEmbedding(), log=lines.append)
        assert list(report.failed) == [bad] and report.new == 3
        assert lines == [line for line in lines if line.startswith(f"no summary for {bad}: ")] and len(lines) == 1
        assert set(per_doc(rows(spec))) == set(texts) - {bad}  # never a chunk embedded without its summary
        assert {node_of(r).metadata["document_summary"] for r in rows(spec).values()} == {"A services contract."}

        refused["on"] = False  # the LLM is back: the same command again summarizes exactly the failed document
        calls = len(server.received)
        embed = FakeEmbedding()
        report = ingest([docs], spec, options, embed_model=embed)
    assert (report.new, report.unchanged, report.summaries, len(server.received) - calls) == (1, 2, 1, 1)
    assert not report.failed and set(per_doc(rows(spec))) == set(texts)
    assert {node_of(r).ref_doc_id for r in rows(spec).values()
            if node_of(r).get_content(MetadataMode.EMBED) in embed.texts_embedded} == {bad}


def test_one_ingest_at_a_time_per_collection(tmp_path: Path) -> None:
    write_contracts(tmp_path / "docs", 2)
    spec = f"chroma:{tmp_path / 'store'}"
    with IngestRecord(StoreSpec.parse(spec), COLLECTION).lock():  # as another process's run would hold it
        with pytest.raises(IngestError, match="another llama-sac ingest is writing to .*store .collection 'llama-sac'"):
            ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding())
    assert ingest([tmp_path / "docs"], spec, settings(), embed_model=FakeEmbedding()).new == 2  # released
