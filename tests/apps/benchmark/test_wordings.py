"""The wordings benchmark: rule-based rewrites of template queries (apps/benchmark/wordings.py)."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llama_index_sac.apps.benchmark import factories, report
from llama_index_sac.apps.benchmark.config import LoaderOptions, RunSettings, parse_config
from llama_index_sac.apps.benchmark.datasets.synthetic import synthetic_contracts
from llama_index_sac.apps.benchmark.runner import run_evaluation
from llama_index_sac.apps.benchmark.wordings import (
    WORDINGS,
    WordingError,
    natural_name,
    parse_template,
    reword,
    reworded_benchmark,
    short_name,
    wording_of,
)
from llama_index_sac.apps.cli import app
from tests.apps.benchmark.test_commands import one_error, runner
from tests.conftest import FakeEmbedding

NDA = ("Consider the Non-Disclosure Agreement between CEII and NDA; Does the document specify whether the Receiving "
       "Party is required to destroy or return Confidential Information upon the termination of the Agreement?")
CUAD = ("Consider the Amendment No. 3 to Wireless Content License Agreement between Fox Mobile Entertainment, Inc. "
        "and Glu Mobile Inc.; What is the expiration date of this contract?")
MAUD = ('Consider the Acquisition Agreement between Parent "BridgeBio Pharma, Inc." and Target "Eidos Therapeutics, '
        'Inc."; What is the Type of Consideration')
PRIVACY = "Consider \"Fiverr\"'s privacy policy; who can see which tasks i hire workers for?"


def test_the_five_forms_of_each_kind_of_template_query():
    """Worked by hand from the rules of the module docstring."""
    q = ("whether the Receiving Party is required to destroy or return Confidential Information upon the termination "
         "of the Agreement")
    assert [reword(NDA, w) for w in WORDINGS] == [
        NDA,
        f"Does the agreement specify {q}, in the Non-Disclosure Agreement between CEII and NDA?",
        f"Does the Non-Disclosure Agreement between CEII and NDA specify {q}?",
        f"Under CEII's NDA, does the agreement specify {q}?",
        f"Does the agreement specify {q}?",
    ]
    name = "the Amendment No. 3 to Wireless Content License Agreement between Fox Mobile Entertainment, Inc. and Glu " \
           "Mobile Inc."
    assert [reword(CUAD, w) for w in WORDINGS[1:]] == [
        f"What is the expiration date of the contract, in {name}?",
        f"What is the expiration date of {name}?",
        "Under Fox Mobile Entertainment's license agreement, what is the expiration date of the contract?",
        "What is the expiration date of the contract?",
    ]
    maud = "the Acquisition Agreement between BridgeBio Pharma, Inc. and Eidos Therapeutics, Inc."
    assert [reword(MAUD, w) for w in WORDINGS[1:]] == [
        f"What is the Type of Consideration, in {maud}?",
        f"What is the Type of Consideration in {maud}",  # no reference to the document, no question mark: kept
        "Under BridgeBio Pharma's merger agreement, what is the Type of Consideration",
        "What is the Type of Consideration",
    ]
    assert [reword(PRIVACY, w) for w in WORDINGS[1:]] == [
        "who can see which tasks i hire workers for, in Fiverr's privacy policy?",
        "who can see which tasks i hire workers for in Fiverr's privacy policy?",
        "Under Fiverr's privacy policy, who can see which tasks i hire workers for?",
        "who can see which tasks i hire workers for?",
    ]


@pytest.mark.parametrize(("document", "short"), [
    ("the AGProjects' Non-Disclosure Agreement", "AGProjects' NDA"),
    ("HNBA's Confidentiality Agreement", "HNBA's NDA"),
    ("the Service Agreement between BicycleTX Ltd and Nigel Crockett for Chief Business Officer Position",
     "BicycleTX's service agreement"),
    ("the Merger Agreement between 'Penn Virginia Corporation' and 'Lonestar Resources US Inc.'",
     "Penn Virginia's merger agreement"),
    ('"TickTick: To Do List with Reminder, Day Planner"\'s privacy policy', "TickTick's privacy policy"),
    ("the Agency Agreement for Asset Sale between The Bon-Ton Stores, Inc., GA Retail, Inc., and Wilmington",
     "Bon-Ton Stores' agency agreement"),
    ("a contract of ours", "a contract of ours"),  # neither shape: the name itself
])
def test_short_names(document, short):
    assert short_name(document) == short


def test_natural_names_drop_quotes_and_labels_but_not_possessives():
    assert natural_name('the Acquisition Agreement between Parent "Ocala Bidco, Inc." and Target "Inovalon"') == (
        "the Acquisition Agreement between Ocala Bidco, Inc. and Inovalon")
    assert natural_name("the AGProjects' Non-Disclosure Agreement") == "the AGProjects' Non-Disclosure Agreement"
    assert natural_name("the Sponsorship Agreement for 'Honey Hole'") == "the Sponsorship Agreement for Honey Hole"


_NAME = st.from_regex(r"[A-Z][a-z]{2,8}( [A-Z][a-z]{2,8})?", fullmatch=True)
_WORDS = st.lists(st.from_regex(r"[a-z]{3,9}", fullmatch=True), min_size=1, max_size=8).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(kind=st.sampled_from(["Supply Agreement", "Mutual Non-Disclosure Agreement", "License Agreement"]),
       a=_NAME, b=_NAME, head=st.sampled_from(["Does", "What is", "Is", "how does"]), rest=_WORDS,
       reference=st.sampled_from(["the document", "this contract", "this agreement", ""]),
       end=st.sampled_from(["?", "", "."]))
def test_rewrites_keep_the_question_and_move_the_name(kind, a, b, head, rest, reference, end):
    document = f"the {kind} between {a} and {b}"
    question = f"{head} {reference} {rest}{end}".replace("  ", " ")
    query = f"Consider {document}; {question}"
    assert parse_template(query) == parse_template(query)  # deterministic
    assert parse_template(query).document == document and parse_template(query).question == question
    forms = {w: reword(query, w) for w in WORDINGS}
    assert forms["template"] == query
    plain = re.sub(r"\b(?:the|this) (?:document|agreement)\b", "the agreement", question, count=1)
    plain = re.sub(r"\bthis contract\b", "the contract", plain, count=1)
    assert forms["none"] == plain  # the question alone, its reference written plainly
    assert a not in forms["none"] and "Consider" not in forms["none"]
    assert forms["trailing"] == f"{plain.rstrip('?.')}, in {document}?"
    assert forms["short"].startswith(f"Under {a}'") and forms["short"].endswith(plain[1:])
    assert document in forms["merged"] and rest in forms["merged"] and ";" not in forms["merged"]
    if reference:
        assert forms["merged"] == question.replace(reference, document, 1)


@pytest.mark.parametrize("query", ["Does the NDA let me keep copies?", "Consider ; what?", "", "Consider x;",
                                   "Consider " + "a" * 401 + "; what?"])
def test_a_query_not_in_the_template_is_one_clear_error(query):
    with pytest.raises(WordingError, match="not a template query"):
        reword(query, "trailing")
    with pytest.raises(TypeError, match="query must be a str"):
        reword(None, "none")  # type: ignore[arg-type]
    with pytest.raises(WordingError, match="unknown wording 'passive'"):
        reword(NDA, "passive")


def test_long_adversarial_queries_are_read_in_linear_time():
    """A 10,000-character name or question: bounded expressions (the name is capped, the question read once)."""
    long_question = "Consider the NDA between A and B; " + "why " * 2500 + "?"
    assert reword(long_question, "none").startswith("why why")
    with pytest.raises(WordingError):
        reword("Consider " + "x " * 5000 + "; what?", "trailing")
    assert short_name("the Agreement between " + "and " * 3000) is not None


def test_reworded_benchmark_scores_each_query_once_per_wording():
    bench = synthetic_contracts(n_documents=2)
    out = reworded_benchmark(bench, ["template", "none"])
    assert len(out.queries) == 2 * len(bench.queries) and out.documents is bench.documents
    first, again = out.queries[0], out.queries[len(bench.queries)]
    assert first.query_id == f"{bench.queries[0].query_id}@template" and first.query == bench.queries[0].query
    assert again.query_id == f"{bench.queries[0].query_id}@none" and again.gold == bench.queries[0].gold
    assert out.datasets == ["nda/template", "services/template", "nda/none", "services/none"]
    assert [wording_of(d) for d in ("nda/none", "cuad", "a/b")] == [("nda", "none"), ("cuad", None), ("a/b", None)]
    for bad, message in (([], "non-empty"), (["none", "none"], "repeated"), (["nope"], "unknown wording 'nope'")):
        with pytest.raises(WordingError, match=message):
            reworded_benchmark(bench, bad)


def test_loader_options_refuse_wordings_of_own_questions_and_repeats():
    with pytest.raises(ValueError, match="your own questions are scored as you wrote them"):
        LoaderOptions(source="folder", data_dir="x", questions="q.jsonl", wordings=["trailing"])
    with pytest.raises(ValueError, match="a wording is repeated"):
        LoaderOptions(wordings=["none", "none"])


@pytest.mark.parametrize(("args", "message"), [
    (["--wordings", "template,passive"], "error: wordings.1: Input should be 'template', 'trailing'"),
    (["--wordings", "none,,short"], "error: --wordings: empty item"),
    (["--wordings", "none,none"], "a wording is repeated"),
])
def test_bad_wordings_on_the_command_line(tmp_path, args, message):
    result = runner.invoke(app, ["eval", *args, "-o", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "c")])
    assert message in one_error(result)
    assert not (tmp_path / "out").exists()


@pytest.mark.filterwarnings("ignore:term statistics from only")
def test_a_run_with_wordings_reports_each_wording_and_reloads_its_loader(tmp_path):
    """A small run (built-in contracts, FakeEmbedding): the per-wording scores are the means of the DATASET/WORDING
    aggregates, and the recorded loader options load the same reworded benchmark again."""
    loader = LoaderOptions(n_documents=4, wordings=["template", "short"])
    bench, used = factories.load_benchmark(loader)
    config = parse_config("default:retrieval=dense,name=dense")
    results = run_evaluation(bench, [config], RunSettings(ks=[1, 2], cache_dir=tmp_path, show_progress=False),
                             embed_model=FakeEmbedding(), loader=used)
    assert results.benchmark.wordings == ["template", "short"]
    assert results.benchmark.loader_options() == loader
    scores = report.wording_scores(results)["dense"]
    assert list(scores) == ["template", "short"] and list(scores["short"]) == ["nda", "services", "overall"]
    aggregates = results.configs[0].aggregates
    drm = [aggregates.at(f"{d}/short", k).drm for d in ("nda", "services") for k in (1, 2)]
    assert scores["short"]["overall"]["drm"] == pytest.approx(sum(drm) / 4)  # type: ignore[arg-type]
    assert scores["short"]["nda"]["p@1"] == aggregates.at("nda/short", 1).precision
    table = report.format_wordings(results)
    assert table.count("\n") == 3 and "| dense | short |" in table and "nda DRM / P@1" in table
    assert report.format_wordings(results.model_copy(update={"benchmark": results.benchmark.model_copy(
        update={"wordings": None, "datasets": {"nda": 1}})})) == ""
    assert "wordings" not in json.loads(results.model_copy(update={"benchmark": results.benchmark.model_copy(
        update={"wordings": None})}).to_json())["benchmark"]
