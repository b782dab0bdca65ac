"""scripts/publish_results.py (the goal-1 table, from a hand-made results dict) and the published runs themselves:
their extractive summaries are what the current code writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from llama_index_sac.datasets.legalbenchrag import load_legalbenchrag
from llama_index_sac.summarizers import ExtractiveSummarizer
from tests.conftest import LEGALBENCH, requires_legalbench

_spec = importlib.util.spec_from_file_location(
    "publish_results", Path(__file__).resolve().parents[1] / "scripts" / "publish_results.py"
)
assert _spec is not None and _spec.loader is not None
publish = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(publish)


def _config(name: str, drm: dict[str, float | None]) -> dict:
    return {"config": {"name": name}, "aggregates": {"overall": {k: {"drm": v} for k, v in drm.items()}}}


def test_goal_table_halves_the_baseline_and_marks_each_k() -> None:
    results = {"configs": [
        _config("base", {"1": 0.4, "2": 0.5, "4": None}),
        _config("sac", {"1": 0.2, "2": 0.3, "4": 0.1}),
    ]}
    assert publish.goal_table(results, "base", "sac").splitlines() == [
        "| | k=1 | k=2 | k=4 |",
        "|---|---:|---:|---:|",
        "| base DRM / 2 | 0.200 | 0.250 | - |",
        "| sac DRM | 0.200 | 0.300 | 0.100 |",
        "| met | yes | no (+0.050) | - |",
    ]


# -- the published runs reproduce: every extractive summary in docs/results is what the code writes today ----------
def _has_extractive_summaries(path: Path) -> bool:
    return any(c["config"]["summarizer"] == "extractive" for c in json.loads(path.read_text())["configs"])


PUBLISHED = [path for path in sorted((Path(__file__).resolve().parents[1] / "docs" / "results").glob("*/results.json"))
             if _has_extractive_summaries(path)]


#: the ExtractiveSummarizer fields a run records in summary_info.summarizer_identity (besides version and fingerprint)
SUMMARIZER_SETTINGS = ("max_chars", "metadata_keys", "max_terms", "lead_chars", "term_sample_chars", "include_date")


def test_published_runs_with_extractive_summaries_exist() -> None:
    assert len(PUBLISHED) >= 6, [p.parent.name for p in PUBLISHED]  # grids 1-3, 4a, 4b, 4c


@requires_legalbench
@pytest.mark.parametrize("path", PUBLISHED, ids=[p.parent.name for p in PUBLISHED])
def test_published_extractive_summaries_are_what_the_code_writes(path: Path) -> None:
    """The runner fits one ExtractiveSummarizer on the run's documents; refitting it here on the same documents must
    give every published summary character for character, so a summarizer change that would make a published
    number stale fails here (re-run and republish that run)."""
    results = json.loads(path.read_text())
    description = results["benchmark"]["description"]  # "LegalBench-RAG (benchmarks_mini, sampling=all, scope=all)"
    options = dict(re.findall(r"(sampling|scope)=(\w+)", description))
    configs = [c for c in results["configs"] if c["config"]["summarizer"] == "extractive"]
    bench = load_legalbenchrag(LEGALBENCH, list(results["benchmark"]["datasets"]), **options)
    for entry in configs:
        config = entry["config"]
        assert entry.get("summaries") and entry.get("summary_info"), (path.parent.name, config["name"], "no summaries")
        # the summarizer's settings as the run recorded them (one extractive summarizer serves every dataset)
        identity = next(iter(entry["summary_info"]["summarizer_identity"].values()))
        summarizer = ExtractiveSummarizer(**{key: identity[key] for key in SUMMARIZER_SETTINGS})
        docs = bench.to_documents(embed_metadata_keys=config["embed_metadata"])
        summarizer.fit(docs)
        written = {doc.id_: summarizer.summarize(doc.text, doc.metadata).summary for doc in docs}
        assert written.keys() == entry["summaries"].keys(), config["name"]
        changed = {doc_id: (entry["summaries"][doc_id], text) for doc_id, text in written.items()
                   if text != entry["summaries"][doc_id]}
        assert not changed, (path.parent.name, config["name"], changed)
