"""The option space, fuzzed: random configuration keys and values in ``llama-sac eval -c`` specs, random ``ingest``
option values. Every option is declared once (a component's field, read by the settings models) and validated by
that model before anything is loaded, so the property is: never a traceback; exit status 0, or 2 with exactly one
``error:`` line on stderr, and then no embedding model was loaded. ``eval`` runs in process (typer's CliRunner) on
two synthetic contracts with a fake embedding and no plots; ``ingest`` runs its option handling in process with the
ingestion itself replaced by building its steps (parser and SAC transformation) with a fake embedding.
"""

from __future__ import annotations

import tempfile
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark import factories, report
from llama_index_sac.apps.benchmark.config import CONFIG_KEYS, PRESETS
from llama_index_sac.apps.cli import app
from llama_index_sac.apps.ingest import commands
from llama_index_sac.apps.ingest.steps import OPTIONS, build_steps
from tests.conftest import FakeEmbedding

runner = CliRunner()

texts = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=8)
#: Values that mean something to some key (kinds, numbers at and around the bounds, non-finite floats, lists).
MEANINGFUL = [
    "recursive", "semantic", "hybrid", "none", "extractive", "llm", "dense", "document-aware", "generic", "expert",
    "head_tail", "map_reduce", "percentile", "gradient", "threshold", "standard_deviation", "nltk", "nupunkt",
    "corpus", "shipped", "file_name", "file_path+dataset", "title", "true", "false", "m", "gpt-4o-mini",
    "/nonexistent/m.gguf", "localhost:8000", "ftp://h/v1", "-1", "0", "1", "2", "3", "40", "99", "100", "150", "300",
    "499", "500", "501", "1000", "100000", "0.0", "0.02", "0.5", "1.0", "1.5", "95", "101", "inf", "-inf", "nan",
    "1e309", "", " ",
]
values = st.one_of(st.sampled_from(MEANINGFUL), st.integers(-3, 1200).map(str), texts)


def typed(annotation: Any) -> st.SearchStrategy[str]:
    """Values of the key's own type (as a spec writes them), in and out of its bounds."""
    if typing.get_origin(annotation) is typing.Literal:
        return st.sampled_from([str(a) for a in typing.get_args(annotation)])
    options = [a for a in typing.get_args(annotation) if a is not type(None)] or [annotation]
    kind = options[0]
    if typing.get_origin(kind) is typing.Literal:
        return typed(kind)
    if typing.get_origin(kind) is list:
        return st.lists(typed(typing.get_args(kind)[0]), max_size=2).map("+".join)
    if kind is bool:
        return st.sampled_from(["true", "false"])
    if kind is int:
        return st.integers(-2, 1200).map(str)
    if kind is float:
        return st.floats().map(repr) | st.sampled_from(["0", "0.2", "1", "inf", "nan"])
    return st.sampled_from(["m", "/nonexistent/m.gguf", "localhost:8000", "x y"]) | texts


keys = st.sampled_from(sorted(CONFIG_KEYS)) | st.sampled_from(["nope", "parser.nope", "summary_chars", "chunk_size"])
items = keys.flatmap(lambda key: st.tuples(st.just(key), st.one_of(*[typed(CONFIG_KEYS.get(key, str))] * 3, values)))
specs = st.builds(
    lambda preset, chosen: preset + (":" + ",".join(f"{k}={v}" for k, v in chosen) if chosen else ""),
    st.sampled_from(sorted(PRESETS)),
    st.lists(items, max_size=3),
)


class Loaded(list[str]):
    """The names of the embedding models the run asked for."""


@pytest.fixture
def fake_models(monkeypatch: pytest.MonkeyPatch) -> Loaded:
    loaded = Loaded()

    def load(name: str | None, *options: object) -> FakeEmbedding:
        loaded.append(str(name))
        return FakeEmbedding()

    monkeypatch.setattr(factories, "load_embedding_model", load)
    monkeypatch.setattr(report, "write_plots", lambda *args, **kwargs: None)  # matplotlib: most of a tiny run's time
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return loaded


def check(result: Any, loaded: Loaded) -> str:
    """The property; returns the error line ("" on success)."""
    assert result.exit_code in (0, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "\u256d" not in result.output, result.output
    if result.exit_code == 0:
        return ""
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert not loaded, f"the model was loaded before the error {errors[0]!r}"
    return errors[0]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@pytest.mark.slow
@given(st.lists(specs, min_size=1, max_size=2))
def test_any_configuration_spec_runs_or_is_one_error_line_before_the_model(fake_models: Loaded, spec_list: list[str]
                                                                           ) -> None:
    fake_models.clear()
    with tempfile.TemporaryDirectory() as tmp:
        args = ["eval", "--n-documents", "2", "--k", "1,2", "--no-progress", "-q", "-o", f"{tmp}/out",
                "--cache-dir", f"{tmp}/cache"]
        for spec in spec_list:
            args += ["-c", spec]
        line = check(runner.invoke(app, args), fake_models)
        assert not line or not Path(f"{tmp}/out").exists()
    event("ran" if not line else "rejected")


def test_the_reported_drift_is_one_error_line(fake_models: Loaded) -> None:
    """``prior_weight=inf`` passed the configuration and failed in the retriever, after the model had loaded."""
    result = runner.invoke(app, ["eval", "-c", "sac-doc:document_retrieval.prior_weight=inf", "--n-documents", "2"])
    assert "document_retrieval.prior_weight: Input should be a finite number" in check(result, fake_models)


# -- ingest ------------------------------------------------------------------------------------------------------

INGEST_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "collection": st.sampled_from(["llama-sac", "a/b", "x", "contracts_2"]) | texts,
    "engine": st.sampled_from(["local", "ray", "spark"]),
    "parser": st.sampled_from(["recursive", "semantic", "hybrid", "fancy"]),
    "summarizer": st.sampled_from(["extractive", "llm", "none"]),
    "llm": st.sampled_from(["m", "/nonexistent/m.gguf", ""]) | texts,
    "llm_api_base": st.sampled_from(["http://127.0.0.1:9/v1", "localhost", ""]) | texts,
    "embed_model": st.sampled_from(["", "/nonexistent/model"]),
    "chunk_size": st.sampled_from(["-1", "0", "1", "300", "500", "x"]) | st.integers(-5, 5000).map(str),
    "workers": st.sampled_from(["0", "1", "2", "x"]),
    "batch_documents": st.sampled_from(["0", "1", "7", "x"]),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(sorted(INGEST_VALUES)), st.just(None), max_size=5).flatmap(
    lambda chosen: st.fixed_dictionaries({name: INGEST_VALUES[name] for name in chosen})))
@pytest.mark.slow
def test_any_ingest_options_build_the_steps_or_are_one_error_line(monkeypatch: pytest.MonkeyPatch,
                                                                 options: dict[str, Any]) -> None:
    assert set(INGEST_VALUES) <= set(OPTIONS)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    loaded = Loaded()
    built: list[Any] = []

    class Report:
        skipped: dict[str, str] = {}
        failed: dict[str, str] = {}
        missing: list[str] = []

        def line(self) -> str:
            return "nothing"

    def ingest(paths: list[str], store: str, settings: Any, log: Any = None, labels: Any = None) -> Report:
        loaded.append(str(settings.embed_model))  # the real one loads the model here
        built.append(build_steps(settings, FakeEmbedding(), None))
        return Report()

    monkeypatch.setattr(commands, "ingest", ingest)
    with tempfile.TemporaryDirectory() as tmp:
        args = ["ingest", tmp, "--vector-store", f"chroma:{tmp}/store", "--no-progress"]
        for name, value in options.items():
            args += ["--" + name.replace("_", "-"), value]
        line = check(runner.invoke(app, args), loaded)
    assert bool(built) == (not line)
    event("built" if built else "rejected")


# -- every configuration key at its edges: refused up front, or the run's components build and retrieve -----------

EDGES = ["-1", "0", "1", "2", "0.5", "inf", "-inf", "nan", "1e309", ""]
TEXT = ("MUTUAL NON-DISCLOSURE AGREEMENT between Acme Corp and Beta LLC. 1. Confidential Information. Each party "
        "shall keep the other's information secret. 2. Term. This Agreement lasts two years. 3. Governing Law. The "
        "laws of Delaware govern this Agreement. ") * 4


def _components_work(config: Any, tmp: str) -> None:
    """Build what ``run_evaluation`` builds for ``config`` (fake embedding, two documents) and retrieve once."""
    from llama_index.core import Document

    from llama_index_sac.apps.benchmark.config import RunSettings

    embed = FakeEmbedding()
    documents = [Document(text=TEXT, id_="nda/a.txt", metadata={"file_name": "a.txt", "file_path": "nda/a.txt",
                                                                "dataset": "nda"}),
                 Document(text=TEXT.replace("Acme", "Zeta"), id_="nda/b.txt",
                          metadata={"file_name": "b.txt", "file_path": "nda/b.txt", "dataset": "nda"})]
    nodes = factories.build_parser(config.parser, embed).get_nodes_from_documents(documents)
    summarizers = factories.build_summarizers(config, ["nda"], lambda _line: None, documents)
    if summarizers:
        transform = factories.build_augmentation(summarizers["nda"], RunSettings(cache_dir=Path(tmp)),
                                                 config.augmentation.embed_summary)
        transform(nodes, documents=documents)
    retriever = factories.build_retriever(config, nodes, embed, 2)
    assert retriever.retrieve("Which law governs the Acme agreement?")


@pytest.mark.slow
def test_every_configuration_key_at_its_edges_is_refused_up_front_or_works(monkeypatch: pytest.MonkeyPatch,
                                                                           tmp_path: Path) -> None:
    """Each key of the configuration (every kind's options), at the edges of numbers and strings, in a plain, a SAC
    and a document-aware configuration: ``configs_from_options`` (what ``eval`` runs before loading a model) refuses
    it with an ``EvaluationSetupError``, or every component of the run builds and retrieves."""
    from llama_index_sac.apps.benchmark.config import EvaluationSetupError
    from llama_index_sac.apps.benchmark.eval_job import configs_from_options

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    seen: set[str] = set()
    for key in sorted(set(CONFIG_KEYS) - {"name"}):
        section, _, field = key.partition(".")
        # an option of a parser or summarizer kind: set that kind (the first that has it) too
        owners = [k for k in ("recursive", "semantic", "hybrid", "extractive", "llm") if _has(section, k, field)]
        prefix = f"{section}.kind={owners[0]}," if owners and field != "kind" else ""
        for preset in ("baseline", "sac", "sac-doc"):
            for value in EDGES:
                spec = f"{preset}:{prefix}{key}={value}"
                try:
                    (config,) = configs_from_options([spec], {})
                except EvaluationSetupError:
                    continue
                fingerprint = config.model_copy(update={"name": "x"}).model_dump_json()
                if fingerprint not in seen:
                    seen.add(fingerprint)
                    _components_work(config, str(tmp_path))
    assert len(seen) > 50, len(seen)  # most edges of most keys are valid somewhere: this is not vacuous


def _has(section: str, kind: str, field: str) -> bool:
    from llama_index_sac.apps.benchmark.components import settings_class

    cls = settings_class(section, kind)
    return cls is not None and field in cls.model_fields
