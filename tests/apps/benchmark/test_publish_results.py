"""scripts/publish_results.py (the goal-1 table, from hand-made results) and the published runs themselves: they load
through the results schema (the current shape, as written) and their extractive summaries are what the
current code writes."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from llama_index_sac.apps.benchmark import factories
from llama_index_sac.apps.benchmark.components import ExtractiveSummarizerSettings
from llama_index_sac.apps.benchmark.results import SCHEMA_VERSION, RunResults, load_results, parse_results
from llama_index_sac.apps.benchmark.wordings import wording_of
from tests.conftest import LEGALBENCH, requires_legalbench

_spec = importlib.util.spec_from_file_location(
    "publish_results", Path(__file__).resolve().parents[3] / "scripts" / "publish_results.py"
)
assert _spec is not None and _spec.loader is not None
publish = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(publish)

ALL_PUBLISHED = sorted((Path(__file__).resolve().parents[3] / "docs" / "results").glob("*/results.json"))


def _scores(drm: float | None) -> dict:
    return {"drm": drm, "precision": 0.5, "recall": 0.5, "hit_rate": 1.0, "mrr": 1.0, "n_queries": 1,
            "ineligible": 0, "drm_undefined": 0}


def _run(drms: dict[str, dict[str, float | None]]) -> RunResults:
    """Results of two configurations on one dataset at k = 1, 2, 4 with the given DRM values (the rest fixed)."""
    configs = [{"config": {"name": name}, "n_chunks": 1, "mean_chunk_chars": 1.0, "mean_embedded_chars": 1.0,
                "chunks_embedded": 1, "chunks_from_cache": 0, "timings": {}, "confusions": [],
                "aggregates": {"overall": {k: {**_scores(v), "n_datasets": 1} for k, v in drm.items()},
                               "datasets": {"d": {k: _scores(v) for k, v in drm.items()}}}}
               for name, drm in drms.items()]
    return parse_results({
        "schema_version": SCHEMA_VERSION, "configs": configs, "peak_memory_mb": 1.0, "versions": {},
        "benchmark": {"name": "b", "n_documents": 1, "n_characters": 1, "n_queries": 1, "datasets": {"d": 1}},
        "settings": {"ks": [1, 2, 4], "embed_model": {}, "cache_dir": "c", "confusion_k": 4},
        "timings": {"model_load_s": 0.0, "query_embed_s": 0.0, "wall_s": 0.0},
    })


def test_goal_table_halves_the_baseline_and_marks_each_k() -> None:
    results = _run({"base": {"1": 0.4, "2": 0.5, "4": None}, "sac": {"1": 0.2, "2": 0.3, "4": 0.1}})
    assert publish.goal_table(results, "base", "sac").splitlines() == [
        "| | k=1 | k=2 | k=4 |",
        "|---|---:|---:|---:|",
        "| base DRM / 2 | 0.200 | 0.250 | - |",
        "| sac DRM | 0.200 | 0.300 | 0.100 |",
        "| met | yes | no (+0.050) | - |",
    ]
    # means over k leave the undefined values out: (0.4 + 0.5) / 2
    assert publish.mean_over_k(results.config("base"), "overall", "drm") == pytest.approx(0.45)



def _two_datasets(scores: dict[str, dict[str, tuple[float, float, float]]]) -> RunResults:
    """Configurations scored on datasets ``a`` and ``b`` at k = 1, 2: ``scores[config][dataset]`` is the
    (DRM, precision, recall) at k = 1; at k = 2 each is 0.1 higher."""
    def block(drm: float, precision: float, recall: float) -> dict:
        return {**_scores(drm), "precision": precision, "recall": recall}

    configs = []
    for name, per in scores.items():
        datasets = {ds: {k: block(*(v + 0.1 * (k == "2") for v in vals)) for k in ("1", "2")}
                    for ds, vals in per.items()}
        configs.append({"config": {"name": name}, "n_chunks": 1, "mean_chunk_chars": 1.0, "mean_embedded_chars": 1.0,
                        "chunks_embedded": 1, "chunks_from_cache": 0, "timings": {}, "confusions": [],
                        "aggregates": {"overall": {k: {**datasets["a"][k], "n_datasets": 2} for k in ("1", "2")},
                                       "datasets": datasets}})
    return parse_results({
        "schema_version": SCHEMA_VERSION, "configs": configs, "peak_memory_mb": 1.0, "versions": {},
        "benchmark": {"name": "b", "n_documents": 2, "n_characters": 2, "n_queries": 2, "datasets": {"a": 1, "b": 1}},
        "settings": {"ks": [1, 2], "embed_model": {}, "cache_dir": "c", "confusion_k": 2},
        "timings": {"model_load_s": 0.0, "query_embed_s": 0.0, "wall_s": 0.0},
    })


def test_held_out_row_scores_each_dataset_with_its_folds_configuration() -> None:
    results = _two_datasets({"w1": {"a": (0.2, 0.3, 0.4), "b": (0.6, 0.1, 0.2)},
                             "w2": {"a": (0.4, 0.2, 0.2), "b": (0.0, 0.5, 0.6)}})
    spec = publish.parse_held_out("doc=a:w1, b:w2", results)
    assert spec == ("doc", {"a": "w1", "b": "w2"})
    # a under w1: means over k 0.25 / 0.35 / 0.45; b under w2: 0.05 / 0.55 / 0.65; their mean 0.15 / 0.45 / 0.55
    assert publish.held_out_table(results, [spec]).splitlines() == [
        "| configuration (each dataset: its fold's values) | a | b | mean of the datasets |",
        "|---|---:|---:|---:|",
        "| doc | 25.0 / 35.0 / 45.0 | 5.0 / 55.0 / 65.0 | 15.00 / 45.00 / 55.00 |",
    ]


@pytest.mark.parametrize(("spec", "message"), [
    ("a:w1,b:w2", "expected NAME="),
    ("doc=a:w1,b", "'b' is not DATASET:CONFIG"),
    ("doc=a:w1,c:w2", "no dataset 'c'"),
    ("doc=a:w1,b:w3", "no configuration 'w3'"),
    ("doc=a:w1,a:w2,b:w1", "dataset 'a' named twice"),
    ("doc=a:w1", "no configuration for the datasets ['b']"),
])
def test_held_out_spec_errors_name_the_problem(spec: str, message: str) -> None:
    results = _two_datasets({"w1": {"a": (0.2, 0.3, 0.4), "b": (0.6, 0.1, 0.2)},
                             "w2": {"a": (0.4, 0.2, 0.2), "b": (0.0, 0.5, 0.6)}})
    with pytest.raises(ValueError, match=re.escape(message)):
        publish.parse_held_out(spec, results)


def test_a_bad_held_out_spec_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "results.json"
    source.write_text(_two_datasets({"w1": {"a": (0.2, 0.3, 0.4), "b": (0.6, 0.1, 0.2)}}).to_json(), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        publish.main([str(source), "run", "--out", str(tmp_path / "out"), "--held-out", "doc=a:w1"])
    assert exit_info.value.code == 2 and "no configuration for the datasets ['b']" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()

# -- the published runs load through the schema (the current shape) -------------------------------------


def test_the_published_runs_exist() -> None:
    assert len(ALL_PUBLISHED) >= 6, [p.parent.name for p in ALL_PUBLISHED]


@pytest.mark.parametrize("path", ALL_PUBLISHED, ids=[p.parent.name for p in ALL_PUBLISHED])
def test_every_published_results_file_loads_with_its_loader_options_and_configurations(path: Path) -> None:
    raw = json.loads(path.read_text(encoding="utf-8"))
    results = load_results(path)
    assert results.schema_version == SCHEMA_VERSION and results.records_dropped
    # the loader options, once only in the description, are fields
    info = results.benchmark
    assert info.description == raw["benchmark"]["description"]
    assert (info.source, info.benchmarks_dir, info.sampling) == ("legalbenchrag", "benchmarks_mini", "all")
    assert f"scope={info.scope}" in info.description and f"--scope {info.scope}" in (results.command or "")
    datasets = list(dict.fromkeys(wording_of(d)[0] for d in raw["benchmark"]["datasets"]))  # DATASET/WORDING
    assert info.datasets == raw["benchmark"]["datasets"] and info.loader_options(LEGALBENCH).datasets == datasets
    assert info.loader_options(LEGALBENCH).wordings == raw["benchmark"].get("wordings")
    # published in the current schema: read back as written
    assert raw["schema_version"] == SCHEMA_VERSION and json.loads(results.to_json()) == raw


# -- the published runs reproduce: every extractive summary in docs/results is what the code writes today ----------

PUBLISHED = [path for path in ALL_PUBLISHED
             if any(c.config.summarizer.kind == "extractive" for c in load_results(path).configs)]


def test_published_runs_with_extractive_summaries_exist() -> None:
    assert len(PUBLISHED) >= 6, [p.parent.name for p in PUBLISHED]  # grids 1-3, 4a, 4b, 4c


@pytest.mark.slow  # re-runs the summaries of every published run
@requires_legalbench
@pytest.mark.parametrize("path", PUBLISHED, ids=[p.parent.name for p in PUBLISHED])
def test_published_extractive_summaries_are_what_the_code_writes(path: Path) -> None:
    """The runner fits one ExtractiveSummarizer on the run's documents; building it again from the recorded
    configuration (the runner's own factory) on the benchmark loaded from the recorded loader options must give every
    published summary character for character, so a summarizer change that would make a published number stale fails
    here (re-run and republish that run)."""
    results = load_results(path)
    bench, _ = factories.load_benchmark(results.benchmark.loader_options(LEGALBENCH))
    for entry in results.configs:
        config = entry.config
        if not isinstance(config.summarizer, ExtractiveSummarizerSettings):
            continue
        assert entry.summaries and entry.summary_info, (path.parent.name, config.name, "no summaries")
        docs = bench.to_documents(embed_metadata_keys=config.augmentation.embed_metadata)
        by_dataset = factories.build_summarizers(config, bench.datasets, lambda _line: None, docs)
        summarizer = next(iter(by_dataset.values()))  # one extractive summarizer serves every dataset
        # the settings the run recorded in its summarizer identity are the configuration's
        recorded = next(iter(entry.summary_info.summarizer_identity.values()))
        current = summarizer.identity()
        for key in ("max_chars", "metadata_keys", "max_terms", "lead_chars", "term_sample_chars", "include_date"):
            assert recorded[key] == current[key], (path.parent.name, config.name, key)
        written = {doc.id_: summarizer.summarize(doc.text, doc.metadata).summary for doc in docs}
        assert written.keys() == entry.summaries.keys(), config.name
        changed = {doc_id: (entry.summaries[doc_id], text) for doc_id, text in written.items()
                   if text != entry.summaries[doc_id]}
        assert not changed, (path.parent.name, config.name, changed)
