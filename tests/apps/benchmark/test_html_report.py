"""The HTML report (``llama-sac report RUN --html``): a small real evaluation, rendered in headless Chromium.

The page is loaded from disk (``file://``) by Debian's ``chromium`` (installed by ``scripts/setup.sh``); the tests
read the DOM Chromium dumps after running the page's scripts, and a screenshot. Every number is compared with the
results dictionary, every mark with the runner's own per-query metrics.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from llama_index_sac.apps.benchmark.config import LoaderOptions, RunSettings, parse_config
from llama_index_sac.apps.benchmark.factories import load_benchmark
from llama_index_sac.apps.benchmark.html_report import MARKS, chunk_mark, write_html_report
from llama_index_sac.apps.benchmark.results import ResultsFormatError
from llama_index_sac.apps.benchmark.run_documents import benchmark_texts
from llama_index_sac.apps.benchmark.runner import run_evaluation
from llama_index_sac.apps.cli import app
from tests.conftest import FakeEmbedding

REPO = Path(__file__).resolve().parents[3]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
requires_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian chromium not found (scripts/setup.sh installs it: apt-get install chromium)"
)
SCRIPT = '<script>document.title="XSS"</script>'
runner = CliRunner()


# -- a DOM tree from the HTML Chromium dumps (stdlib parser) --------------------------------------------------------

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Node:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Node | None):
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.children: list[Node | str] = []

    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        out = []
        for child in self.children:
            if isinstance(child, Node):
                if ((tag is None or child.tag == tag) and (cls is None or cls in child.attrs.get("class", "").split())
                        and all(child.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())):
                    out.append(child)
                out.extend(child.all(tag, cls, **attrs))
        return out


class _TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = self.at = Node("#document", {}, None)

    def handle_starttag(self, tag, attrs):
        node = Node(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in VOID:
            self.at = node

    def handle_endtag(self, tag):
        node: Node | None = self.at
        while node is not None and node.tag != tag:
            node = node.parent
        if node is not None and node.parent is not None:
            self.at = node.parent

    def handle_data(self, data):
        self.at.children.append(data)


def parse(markup: str) -> Node:
    builder = _TreeBuilder()
    builder.feed(markup)
    builder.close()
    return builder.root


def chromium(page: Path, work: Path, screenshot: Path | None = None) -> str:
    """The DOM of ``page`` after its scripts ran (``--dump-dom``), or a 1400x2400 screenshot when asked."""
    assert CHROMIUM is not None
    args = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-extensions", f"--user-data-dir={work / 'chromium-profile'}"]
    args += ["--window-size=1400,2400", f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    done = subprocess.run([*args, page.as_uri()], capture_output=True, text=True, timeout=180, check=True)
    return done.stdout


# -- one small real evaluation, shared ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """synthetic_contracts(6) under baseline and sac, k = 1, 2, 4 (fake embedding: fast, deterministic)."""
    bench, loader = load_benchmark(LoaderOptions(source="synthetic", n_documents=6))
    settings = RunSettings(ks=[1, 2, 4], cache_dir=tmp_path_factory.mktemp("cache"), show_progress=False)
    with pytest.warns(UserWarning, match="term statistics from only 6"):
        results = run_evaluation(bench, [parse_config("baseline"), parse_config("sac")], settings,
                                 embed_model=FakeEmbedding(), loader=loader)
    results.command = "llama-sac eval --n-documents 6 --k 1,2,4"
    return bench, results


@pytest.mark.slow
@requires_chromium
def test_page_rendered_in_chromium(run, tmp_path):
    bench, results = run
    results = results.model_copy(deep=True)
    texts = dict(bench.documents)
    # untrusted text everywhere: a document, a query, a summary
    first = results.configs[0].records[0]
    doc_id, start, end = first.retrieved[0]
    assert end - start > len(SCRIPT)
    texts[doc_id] = texts[doc_id][:start] + SCRIPT + texts[doc_id][start + len(SCRIPT):]  # same length, offsets hold
    for config in results.configs:
        config.records[0].query += "<img src=x onerror=\"document.title='XSS2'\">"
    sac = results.config("sac")
    some_doc = next(iter(sac.summaries))
    sac.summaries[some_doc] = "</p></li><script>document.title='XSS3'</script>" + sac.summaries[some_doc]
    page = write_html_report(results, tmp_path / "report.html", texts=texts)
    dom = parse(chromium(page, tmp_path))

    # the page's own script ran (so an unescaped <script> would have run too), and the title is untouched
    assert dom.all("html")[0].attrs.get("data-js") == "on"
    assert dom.all("title")[0].text() == "SAC evaluation report: synthetic-contracts"
    assert len(dom.all("script")) == 1 and not [img for img in dom.all("img") if "onerror" in img.attrs]
    assert any(SCRIPT in div.text() for div in dom.all("div", cls="text"))  # shown as text
    assert "document.title='XSS3'" in dom.text() and "onerror=\"document.title='XSS2'\"" in dom.text()
    assert "hidden" not in dom.all("div", id="filters")[0].attrs  # the filter bar was shown by the script

    # self-contained: plots are data: URIs, no stylesheet or script is fetched, links stay on the page
    images = dom.all("img")
    assert len(images) == 3 and all(img.attrs["src"].startswith("data:image/png;base64,") for img in images)
    assert not dom.all("link") and not [s for s in dom.all("script") if "src" in s.attrs]
    assert all(a.attrs["href"].startswith("#") for a in dom.all("a"))

    # tables: 5 metrics x 3 scopes x 2 configurations x 3 k, every value as in the results
    metric_cells = [c for c in dom.all("td", cls="num") if "data-metric" in c.attrs]
    assert len(metric_cells) == 5 * 3 * 2 * 3
    for cell in metric_cells:
        a = cell.attrs
        value = getattr(results.config(a["data-config"]).aggregates.at(a["data-scope"], int(a["data-k"])),
                        a["data-metric"])
        assert cell.text() == f"{value:.3f}", a
    assert {c.attrs["data-scope"] for c in metric_cells} == {"nda", "services", "overall"}
    drm1 = dom.all("td", data_config="sac", data_scope="overall", data_k="1", data_metric="drm")[0]
    by_dataset = sac.aggregates.datasets
    assert drm1.text() == f"{(by_dataset['nda']['1'].drm + by_dataset['services']['1'].drm) / 2:.3f}"

    # confusions: the top pairs of each configuration, as in the results
    for table in dom.all("table", cls="confusions"):
        pairs = results.config(table.attrs["data-config"]).confusions[:10]
        rows = [[td.text() for td in tr.all("td")] for tr in table.all("tbody")[0].all("tr")]
        assert rows == [[p.gold, p.retrieved, str(p.chunks), str(p.queries)] for p in pairs]

    # drill-down: one entry per query, in order; per configuration the top-4 chunks with marks that agree with the
    # runner's own metrics (DRM = wrong-document share, hit rate, MRR = 1 / rank of the first HIT)
    queries = dom.all("details", cls="query")
    records = {c.name: c.records for c in results.configs}
    assert [q.attrs["data-query-id"] for q in queries] == [r.query_id for r in records["baseline"]]
    assert len(queries) == len(bench.queries) == 27
    seen_marks = set()
    for n, query in enumerate(queries):
        gold_text = query.all("div", cls="gold")[0].text()
        assert all(texts[d][s:e] in gold_text for d, s, e in records["baseline"][n].gold)
        for name in ("baseline", "sac"):
            record = records[name][n]
            chunks = query.all("div", cls="col", data_config=name)[0].all("li", cls="chunk")
            assert [(c.attrs["data-doc"], int(c.attrs["data-start"]), int(c.attrs["data-end"])) for c in chunks] == \
                record.retrieved[:4]
            marks = [c.attrs["data-mark"] for c in chunks]
            seen_marks.update(marks)
            scores = record.scores["4"]
            assert marks.count("wrong-doc") / len(marks) == scores.drm
            assert ("hit" in marks) == (scores.hit_rate == 1.0)
            assert scores.mrr == (1 / (marks.index("hit") + 1) if "hit" in marks else 0.0)
            for chunk, mark in zip(chunks, marks):
                assert chunk.all("span", cls="badge")[0].text() == MARKS[mark]
                highlighted = "".join(m.text() for m in chunk.all("mark"))
                assert (highlighted != "") == (mark == "hit") and highlighted in gold_text
                summary = chunk.all("p", cls="summary")
                if name == "sac":
                    assert summary[0].text() == "summary: " + sac.summaries[chunk.attrs["data-doc"]]
                else:
                    assert not summary
        assert "no document summaries" in query.all("div", cls="col", data_config="baseline")[0].text()
    assert seen_marks == {"hit", "right-doc", "wrong-doc"}

    # a screenshot of the top of the page: a real picture, not a blank one
    shot = tmp_path / "report.png"
    chromium(page, tmp_path, screenshot=shot)
    assert shot.stat().st_size > 50_000
    with Image.open(shot) as image:
        assert image.size == (1400, 2400)
        assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 200


@pytest.mark.slow
@requires_chromium
def test_published_slim_results_tables_plots_and_confusions_only(tmp_path):
    # a published results.json as a plain dictionary: slim, its per-query records left out (the first schema version
    # omitted the key, the current one writes null and says why)
    results = json.loads((REPO / "docs/results/mini-retrieval/results.json").read_text(encoding="utf-8"))
    assert all(c.get("records") is None for c in results["configs"]) and results["records_dropped"]
    page = write_html_report(results, tmp_path / "slim.html")
    dom = parse(chromium(page, tmp_path))
    assert not dom.all("details", cls="query") and dom.all("p", id="no-records")
    assert "needs a run with records" in dom.all("p", id="no-records")[0].text()
    n_configs = len(results["configs"])
    scopes = len(results["benchmark"]["datasets"]) + 1  # and overall
    cells = [c for c in dom.all("td") if "data-metric" in c.attrs]
    assert len(cells) == 5 * scopes * n_configs * len(results["settings"]["ks"])
    cuad = results["configs"][2]
    cell = dom.all("td", data_config=cuad["config"]["name"], data_scope="cuad", data_k="8", data_metric="recall")[0]
    assert cell.text() == f"{cuad['aggregates']['datasets']['cuad']['8']['recall']:.3f}"
    assert len(dom.all("table", cls="confusions")) == n_configs and len(dom.all("img")) == 3


def test_records_without_texts_show_offsets_and_say_so(run, tmp_path):
    _, results = run
    page = write_html_report(results.to_dict(), tmp_path / "offsets.html", compare=("sac", "baseline"), k=2)
    dom = parse(page.read_text(encoding="utf-8"))
    assert "shown by document and character offsets only" in dom.all("span", id="offsets-only")[0].text()
    assert not dom.all("div", cls="text")
    first = dom.all("details", cls="query")[0]
    assert [c.attrs["data-config"] for c in first.all("div", cls="col")] == ["sac", "baseline"]
    assert len(first.all("li", cls="chunk")) == 2 * 2  # k=2 per configuration


def test_chunk_mark_hand_worked():
    gold = [("a", 10, 20), ("a", 30, 30), ("c", 0, 4)]  # the zero-length span counts nowhere
    assert chunk_mark(("a", 15, 25), gold) == "hit"
    assert chunk_mark(("a", 19, 20), gold) == "hit"  # one shared character
    assert chunk_mark(("a", 20, 30), gold) == "right-doc"  # half-open: touches [10, 20) without sharing
    assert chunk_mark(("a", 29, 31), gold) == "right-doc"
    assert chunk_mark(("c", 3, 9), gold) == "hit"
    assert chunk_mark(("b", 10, 20), gold) == "wrong-doc"
    assert chunk_mark(("a", 12, 12), gold) == "empty"


@pytest.mark.parametrize(
    ("kwargs", "error", "pattern"),
    [
        ({"compare": ("baseline", "nope")}, ValueError, "unknown configuration.*'nope'.*the run has 'baseline'"),
        ({"compare": ("sac", "sac")}, ValueError, "two different configurations"),
        ({"compare": "baseline,sac"}, TypeError, "compare must be a pair"),
        ({"k": 3}, ValueError, r"k must be one of the run's k values \[1, 2, 4\], got 3"),
        ({"k": True}, TypeError, "k must be an int"),
        ({"texts": ["x"]}, TypeError, "texts must be a mapping"),
        ({"texts": "shortened"}, ValueError, "is outside .* characters.*texts of another corpus"),
        ({"results": [1]}, TypeError, "results must be RunResults or a results dictionary, got list"),
        ({"results": {"configs": []}}, ResultsFormatError, "schema_version None"),
        ({"results": {"schema_version": 2, "configs": []}}, ResultsFormatError, "benchmark"),
    ],
)
def test_bad_arguments_one_clear_error_and_no_file(run, tmp_path, kwargs, error, pattern):
    bench, results = run
    if kwargs.get("texts") == "shortened":
        kwargs = {"texts": {doc_id: text[:10] for doc_id, text in bench.documents.items()}}
    results = kwargs.pop("results", results)
    with pytest.raises(error, match=pattern):
        write_html_report(results, tmp_path / "r.html", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_benchmark_texts_regenerated_and_checked(run):
    bench, results = run
    assert results.benchmark.source == "synthetic"
    assert benchmark_texts(results) == bench.documents
    other = results.model_copy(deep=True)
    other.benchmark.seed = 1
    with pytest.raises(ValueError, match="do not match the run: query 'nda-000-law'"):
        benchmark_texts(other)
    other.benchmark.source = "custom"
    with pytest.raises(ValueError, match="not made by a known loader"):
        benchmark_texts(other)


# -- the command line ----------------------------------------------------------------------------------------------


def one_error(result) -> str:
    assert result.exit_code == 2, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    return errors[0]


def test_report_html_of_a_run_folder_regenerates_the_texts(run, tmp_path):
    bench, results = run
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(results.to_json(), encoding="utf-8")
    out = runner.invoke(app, ["report", str(tmp_path / "run"), "--html", str(tmp_path / "r.html"),
                              "--compare", "sac,baseline"])
    assert out.exit_code == 0, out.output
    assert f"HTML report: {tmp_path / 'r.html'}" in out.stdout and "DRM@k" in out.stdout
    dom = parse((tmp_path / "r.html").read_text(encoding="utf-8"))
    query = dom.all("details", cls="query")[0]
    doc_id, start, end = results.configs[0].records[0].gold[0]
    assert bench.documents[doc_id][start:end] in query.all("div", cls="gold")[0].text()
    assert query.all("div", cls="col")[0].attrs["data-config"] == "sac"


@pytest.mark.slow
def test_report_html_of_a_legalbench_run_reads_the_data_folder(tmp_path):
    from tests.apps.benchmark.test_legalbenchrag import make_data

    root = make_data(tmp_path / "lbr")
    bench, loader = load_benchmark(LoaderOptions(source="legalbenchrag", data_dir=str(root), sampling="random",
                                                 sample=2, seed=3))
    results = run_evaluation(bench, [parse_config("baseline:parser.chunk_size=30,name=small"),
                                     parse_config("baseline")],
                             RunSettings(ks=[1, 2], cache_dir=tmp_path / "cache", show_progress=False),
                             embed_model=FakeEmbedding(), loader=loader)
    path = tmp_path / "results.json"
    path.write_text(results.to_json(), encoding="utf-8")
    assert benchmark_texts(results).items() >= bench.documents.items()  # every test read: a superset
    out = runner.invoke(app, ["report", str(path), "--html", str(tmp_path / "r.html"), "--data-dir", str(root)])
    assert out.exit_code == 0, out.output
    gold = parse((tmp_path / "r.html").read_text(encoding="utf-8")).all("div", cls="gold")
    assert len(gold) == len(bench.queries) and "Governing law" in "".join(g.text() for g in gold)
    wrong = runner.invoke(app, ["report", str(path), "--html", str(tmp_path / "w.html"), "--data-dir",
                                str(tmp_path / "nowhere")])
    assert "data directory not found" in one_error(wrong) and not (tmp_path / "w.html").exists()


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("empty-dir", [], "is a folder without results.json: expected a run folder of llama-sac eval"),
        ("not-results", [], "other.json: not a results.json of llama-sac eval ("),
        ("run", ["--compare", "sac"], "--compare: expected two configuration names A,B, got 'sac'"),
        ("run", ["--compare", "sac,nope"], "compare: unknown configuration(s) 'nope'"),
    ],
)
def test_report_refuses_bad_input_with_one_error(run, tmp_path, setup, args, message):
    target = tmp_path / "in"
    target.mkdir()
    if setup == "not-results":
        target = target / "other.json"
        target.write_text('{"name": "a package.json", "version": "1.0"}', encoding="utf-8")
    elif setup == "run":
        (target / "results.json").write_text(run[1].to_json(), encoding="utf-8")
    result = runner.invoke(app, ["report", str(target), "--html", str(tmp_path / "out.html"), *args])
    assert message in one_error(result)
    assert not (tmp_path / "out.html").exists() and result.stdout == ""


def test_report_html_options_need_html(run, tmp_path):
    path = tmp_path / "results.json"
    path.write_text(run[1].to_json(), encoding="utf-8")
    for option in (["--compare", "baseline,sac"], ["--data-dir", str(tmp_path)]):
        assert one_error(runner.invoke(app, ["report", str(path), *option])) == (
            "error: --compare and --data-dir need --html")


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "deep"])
def test_report_of_a_device_a_fifo_or_deep_json_is_one_error_at_once(tmp_path, target):
    path = Path(target)
    if target == "fifo":
        path = tmp_path / "r.json"
        os.mkfifo(path)
    elif target == "deep":
        path = tmp_path / "r.json"
        path.write_text("[" * 100_000 + "]" * 100_000)
    result = runner.invoke(app, ["report", str(path)])
    line = one_error(result)
    assert line.startswith(f"error: cannot read results from {path}: not a results.json of llama-sac eval (")
    assert ("is not a regular file" in line) if target != "deep" else ("nested deeper than 64 levels" in line)
    assert len(result.stderr.splitlines()) == 1


def test_report_html_of_results_claiming_a_billion_documents_is_one_line(run, tmp_path):
    data = json.loads(run[1].to_json())
    data["benchmark"]["n_documents"] = 10**9
    (tmp_path / "results.json").write_text(json.dumps(data), encoding="utf-8")
    result = runner.invoke(app, ["report", str(tmp_path / "results.json"), "--html", str(tmp_path / "o.html")])
    line = one_error(result)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "cannot be loaded again: its recorded loader options are invalid (n_documents: " in line
    assert not (tmp_path / "o.html").exists()


def test_report_html_of_an_eval_folder_run_shows_chunk_text_and_compares_default(tmp_path, monkeypatch):
    """``eval --folder`` records its folder and questions file: ``report --html`` reads the documents again for the
    chunk text; without ``--compare`` the drill-down shows the run's first configuration against ``default``."""
    from llama_index_sac.apps.benchmark import factories
    from llama_index_sac.apps.benchmark.results import load_results
    from tests.apps.benchmark.test_folder_default import ACME, ZETA

    monkeypatch.setattr(factories, "load_embedding_model", lambda *args, **kwargs: FakeEmbedding())
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "acme.txt").write_text(ACME, encoding="utf-8")
    (folder / "zeta.txt").write_text(ZETA, encoding="utf-8")
    questions = tmp_path / "q.jsonl"
    questions.write_text(json.dumps({"question": "Which law governs the Acme NDA?", "file": "acme.txt",
                                     "quote": "the laws of Delaware"}) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["eval", "--folder", str(folder), "--questions", str(questions), "-c", "baseline",
                                 "-c", "sac", "-c", "default", "--k", "1,2", "-o", str(tmp_path / "run"),
                                 "--no-progress", "-q"])
    assert result.exit_code == 0, result.output
    recorded = load_results(tmp_path / "run").benchmark
    assert (recorded.source, recorded.data_dir, recorded.questions) == ("folder", str(folder), str(questions))
    out = runner.invoke(app, ["report", str(tmp_path / "run"), "--html", str(tmp_path / "r.html")])
    assert out.exit_code == 0, out.output
    assert f"reading the documents from {folder}" in out.stderr
    dom = parse((tmp_path / "r.html").read_text(encoding="utf-8"))
    columns = dom.all("div", cls="col")
    assert [c.attrs["data-config"] for c in columns] == ["baseline", "default"]
    texts = [t.text() for c in columns for t in c.all("div", cls="text")]
    assert texts and all(t in ACME or t in ZETA for t in texts)  # each chunk's exact text
    assert "the laws of Delaware" in dom.all("div", cls="gold")[0].text()
    moved = runner.invoke(app, ["report", str(tmp_path / "run"), "--html", str(tmp_path / "r3.html"), "--data-dir",
                                str(tmp_path / "nowhere")])
    assert moved.exit_code == 0 and "was not found: the drill-down shows offsets only" in moved.stderr
