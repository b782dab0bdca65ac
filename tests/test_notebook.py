"""notebooks/legalbench_rag_sac.ipynb: its stored outputs are there and current, it uses the public API only, and it
still runs (published results + a small live run) so it never rots."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "legalbench_rag_sac.ipynb"
PUBLISHED = sorted(p.parent.name for p in (REPO / "docs" / "results").glob("*/results.json"))

_missing = [name for name in ("nbclient", "nbformat", "ipykernel") if importlib.util.find_spec(name) is None]


def _code_cells(nb: dict[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in nb["cells"] if cell["cell_type"] == "code"]


def _source(cell: dict[str, Any]) -> str:
    source = cell["source"]
    return source if isinstance(source, str) else "".join(source)


def _stdout(cell: dict[str, Any]) -> str:
    """Everything the cell printed (stored ``text`` may be one string or a list of lines)."""
    parts = []
    for out in cell.get("outputs", []):
        if out["output_type"] == "stream" and out.get("name") == "stdout":
            text = out["text"]
            parts.append(text if isinstance(text, str) else "".join(text))
    return "".join(parts)


def _images(nb: dict[str, Any]) -> int:
    return sum("image/png" in out.get("data", {}) for cell in _code_cells(nb) for out in cell.get("outputs", []))


def _check_outputs(nb: dict[str, Any]) -> None:
    """What a complete run of the notebook shows: every published run tabulated, the plots, the live verdict."""
    outputs = "".join(_stdout(cell) for cell in _code_cells(nb))
    assert PUBLISHED, "docs/results/*/results.json missing"
    for name in PUBLISHED:
        assert f"== {name} (overall) ==" in outputs
    assert _images(nb) >= len(PUBLISHED) + 1  # one figure per published run, plus the live one
    assert "SAC lower: True" in outputs  # the live comparison ran and SAC lowered DRM@4 on the look-alike contracts
    assert re.search(r"^  1\. (gold|right doc|WRONG doc) +nda/", outputs, re.M)  # the per-query drill-down
    assert re.search(r"distinctive names \[.+\]", outputs) and "sac+document-aware" in outputs  # document-aware


def test_stored_outputs_are_complete() -> None:
    """The notebook as committed shows its results without running it: every code cell ran once, in order, with
    output and no error."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    cells = _code_cells(nb)
    assert [cell["execution_count"] for cell in cells] == list(range(1, len(cells) + 1))
    for cell in cells:
        assert cell["outputs"], f"no stored output for the cell starting {_source(cell)[:60]!r}"
        assert not [out for out in cell["outputs"] if out["output_type"] == "error"]
    _check_outputs(nb)


def test_only_the_public_api() -> None:
    """Code cells import the package's top level only (``from llama_index_sac import ...``), never its modules."""
    code = "\n".join(_source(cell) for cell in _code_cells(json.loads(NOTEBOOK.read_text(encoding="utf-8"))))
    assert "from llama_index_sac import" in code
    assert not re.search(r"\bllama_index_sac\.", code), re.findall(r".*\bllama_index_sac\..*", code)


@pytest.mark.slow
@pytest.mark.skipif(bool(_missing), reason=f"notebook test needs the dev extra: missing {', '.join(_missing)}")
def test_notebook_runs_and_matches_its_stored_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("SAC_NOTEBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    stored = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(
        nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOK.parent)}}
    )
    client.execute()
    fresh = json.loads(nbformat.writes(nb))

    _check_outputs(fresh)
    assert any((tmp_path / "cache").iterdir()), "the live SAC run did not use SAC_NOTEBOOK_CACHE"
    # the published tables are read from docs/results: the stored copies must be today's
    pairs = [(old, new) for old, new in zip(_code_cells(stored), _code_cells(fresh))
             if "published" in old["metadata"].get("tags", [])]
    assert len(pairs) == 4
    for old, new in pairs:
        assert _stdout(old) == _stdout(new), "stale stored output: re-run the notebook and save it (CONTRIBUTING.md)"


@pytest.mark.slow
@pytest.mark.skipif(bool(_missing), reason=f"notebook test needs the dev extra: missing {', '.join(_missing)}")
def test_notebook_runs_outside_the_checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A copy of the notebook in a folder of its own, as a user who installed the package opens it: no published
    runs around it and no ``SAC_RESULTS_DIR``, so it says so and runs the live part (``tests/test_release.py`` does
    the same with the installed wheel)."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.delenv("SAC_RESULTS_DIR", raising=False)
    monkeypatch.setenv("SAC_NOTEBOOK_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    work = tmp_path / "user"
    work.mkdir()
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(work)}}).execute()
    outputs = "".join(_stdout(cell) for cell in _code_cells(json.loads(nbformat.writes(nb))))
    assert "no published runs here" in outputs and "(overall) ==" not in outputs
    assert "SAC lower: True" in outputs and "sac+document-aware" in outputs
