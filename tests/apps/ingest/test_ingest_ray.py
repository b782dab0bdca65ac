"""``llama-sac ingest --engine ray`` on a local Ray cluster started by these tests
(``ray.init(num_cpus=2)``, shut down after): the same rows as ``--engine local``, real MiniLM on both sides.

Identical means: the same node ids, documents, offsets, summaries, metadata and EMBED strings, byte for byte, and
vectors equal to float tolerance (the two engines batch the chunks differently for the model).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from llama_index.core.schema import MetadataMode

from llama_index_sac.apps.ingest.files import StoreSpec
from llama_index_sac.apps.ingest.run import IngestError, IngestSettings, ingest
from tests.apps.ingest.test_ingest_cli import node_of, per_doc, rows, write_contracts
from tests.apps.ingest.test_query_serve import _http_rows as http_rows
from tests.apps.ingest.test_query_serve import chroma_server  # noqa: F401 - the fixture
from tests.conftest import FakeEmbedding

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]'; scripts/setup.sh does it)")
pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")

pytestmark = [
    pytest.mark.slow,  # real MiniLM in the driver and in every Ray worker
    pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context"),  # Ray's own DataContext defaults
]


@pytest.fixture(scope="module")
def ray_cluster() -> Iterator[None]:
    """A local Ray cluster of two CPUs for this module (the engine uses it instead of starting its own)."""
    ray.init(num_cpus=2, include_dashboard=False, logging_level=logging.WARNING, log_to_driver=False)
    yield
    ray.shutdown()


def assert_identical(got: dict, expected: dict) -> None:
    assert got.keys() == expected.keys()  # the same node ids
    for node_id, row in got.items():
        other = expected[node_id]
        assert (row.doc_id, row.metadata, row.text) == (other.doc_id, other.metadata, other.text), node_id
        a, b = node_of(row), node_of(other)
        assert (a.start_char_idx, a.end_char_idx) == (b.start_char_idx, b.end_char_idx)
        assert a.metadata["document_summary"] == b.metadata["document_summary"]
        assert a.get_content(MetadataMode.EMBED) == b.get_content(MetadataMode.EMBED)
        np.testing.assert_allclose(row.vector, other.vector, rtol=0, atol=1e-5)


def test_ray_engine_writes_the_rows_of_the_local_engine(ray_cluster: None, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    texts = write_contracts(docs, 8)
    local, on_ray = f"chroma:{tmp_path / 'local'}", f"chroma:{tmp_path / 'ray'}"
    first = ingest([docs], local, IngestSettings(show_progress=False))
    report = ingest([docs], on_ray, IngestSettings(engine="ray", workers=2, show_progress=False))

    assert (report.new, report.chunks_written, report.summaries) == (first.new, first.chunks_written, 8)
    table = rows(on_ray)
    assert set(per_doc(table)) == set(texts) and len(table) == report.chunks_written
    assert_identical(table, rows(local))
    for row in table.values():  # summaries per WHOLE document: every chunk of a document carries the same one
        node = node_of(row)
        assert node.text == texts[row.doc_id][node.start_char_idx: node.end_char_idx]
        assert node.metadata["summary_source"] == "chunks"  # rebuilt exactly from all of the document's chunks

    # an update on Ray: only the changed file is processed; the result equals the local engine's update
    changed = sorted(texts)[3]
    (tmp_path / changed).write_text(texts[changed][:900] + "\n\nAMENDMENT. Term extended to 2032.", encoding="utf-8")
    before = rows(on_ray)
    report = ingest([docs], on_ray, IngestSettings(engine="ray", workers=2, show_progress=False))
    assert (report.new, report.changed, report.unchanged, report.summaries) == (0, 1, 7, 1)
    ingest([docs], local, IngestSettings(show_progress=False))
    after = rows(on_ray)
    assert_identical(after, rows(local))
    assert {i: r.metadata for i, r in after.items() if r.doc_id != changed} == {
        i: r.metadata for i, r in before.items() if r.doc_id != changed}


class FailingEmbedding(FakeEmbedding):
    """Fails in the worker, as a model that runs out of memory would."""

    @classmethod
    def class_name(cls) -> str:
        return "FailingEmbedding"

    def _vector(self, text: str) -> list[float]:
        raise RuntimeError("the embedding worker failed")


def test_a_failure_in_a_ray_worker_is_one_clear_error(ray_cluster: None, tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write_contracts(docs, 2)
    with pytest.raises(IngestError, match=r"the Ray engine failed: RuntimeError: the embedding worker failed"):
        ingest([docs], f"qdrant:{tmp_path / 'store'}", IngestSettings(engine="ray", show_progress=False),
               embed_model=FailingEmbedding())


def test_ray_engine_into_a_chroma_server(ray_cluster: None, chroma_server: str, tmp_path: Path) -> None:  # noqa: F811
    """``--engine ray`` with a Chroma server (``chroma run``) as the store: the rows equal the local engine's into
    an embedded store, and a second run changes nothing."""
    docs = tmp_path / "docs"
    write_contracts(docs, 3)
    remote = StoreSpec.parse(chroma_server, tmp_path / "state")
    report = ingest([docs], remote, IngestSettings(engine="ray", workers=1, show_progress=False),
                    embed_model=FakeEmbedding())
    local = f"chroma:{tmp_path / 'local'}"
    first = ingest([docs], local, IngestSettings(show_progress=False), embed_model=FakeEmbedding())
    assert (report.new, report.chunks_written) == (3, first.chunks_written) > (0, 0)
    assert sorted(http_rows(remote)) == sorted(rows(local))  # the same node ids
    again = ingest([docs], remote, IngestSettings(engine="ray", workers=1, show_progress=False),
                   embed_model=FakeEmbedding())
    assert (again.new, again.changed, again.unchanged, again.chunks_written) == (0, 0, 3, 0)
