"""The pages a user and a contributor read first stay true: every link of README.md, CONTRIBUTING.md and docs/
resolves, every repository path the README and CONTRIBUTING name exists, the README puts what it is, how to install,
a LlamaIndex example and the two commands first, and the changelog is release notes with an unreleased section on
top."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted((REPO / "docs").glob("*.md"))]

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_CODE = re.compile(r"`([^`\s]+)`")


def _tracked() -> list[str]:
    """The repository's files: git's list in a checkout, else every file under the repository (an sdist)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return [str(p.relative_to(REPO)) for p in REPO.rglob("*") if p.is_file()]
    return out.splitlines()


def _anchors(text: str) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_links_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    broken = []
    for target in _LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked.read_text(encoding="utf-8")):
            broken.append(target)
    assert not broken, f"{page.name}: links that lead nowhere: {broken}"


def _named_paths(text: str, tracked: list[str]) -> list[str]:
    """The repository paths a page names in backticks: those starting with a top-level entry of the repository
    (``docs/production.md``, ``scripts/_python.sh``) and bare file names of a tracked kind (``bench_linear.py``).
    Placeholders (``docs/results/NAME/``) are left out."""
    top = {name.split("/", 1)[0] for name in tracked}
    named = []
    for token in _CODE.findall(text):
        token = token.rstrip(".,;:")
        if "NAME" in token or "<" in token or "*" in token:
            continue
        first = token.split("/", 1)[0]
        if token.startswith(("../", "~", "/")):
            continue  # beside or outside the repository (``../shared``), or the user's own folders
        if ("/" in token and first in top) or re.fullmatch(r"[\w.-]+(\.(py|sh|md|ipynb|toml)|/)", token):
            named.append(token)
    return named


@pytest.mark.parametrize("name", ["README.md", "CONTRIBUTING.md"])
def test_named_paths_exist(name: str) -> None:
    tracked = _tracked()
    basenames = {path.rsplit("/", 1)[-1] for path in tracked}
    folders = {path.rsplit("/", 1)[0] + "/" for path in tracked if "/" in path}
    folder_names = {part + "/" for path in tracked for part in path.split("/")[:-1]}
    gitignore = REPO / ".gitignore"
    ignored = set(gitignore.read_text(encoding="utf-8").split()) if gitignore.exists() else set()
    missing = []
    for token in _named_paths((REPO / name).read_text(encoding="utf-8"), tracked):
        if re.fullmatch(r"[\w.-]+/", token):  # a folder named alone: some folder of the repository, or an output
            exists = token in folder_names or f"/{token}" in ignored
        elif "/" in token:
            exists = (REPO / token).exists() or any(p.startswith(token) for p in folders)
        else:
            exists = token in basenames
        if not exists:
            missing.append(token)
    assert not missing, f"{name} names paths that do not exist: {missing}"
    assert "harness/" not in (REPO / name).read_text(encoding="utf-8")


def test_readme_starts_with_what_install_example_and_the_two_commands() -> None:
    head = "\n".join((REPO / "README.md").read_text(encoding="utf-8").splitlines()[:60])
    assert "## Install" in head and "pip install" in head
    assert "```python" in head and "from llama_index_sac import" in head and "IngestionPipeline" in head
    assert "bash scripts/eval.sh" in head and "bash scripts/test.sh" in head


def test_changelog_is_release_notes() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## (.+)$", text, re.M)
    assert versions[0] == "0.3.0 (unreleased)", versions
    sections = re.split(r"^## ", text, flags=re.M)
    for section in sections[1:]:
        headings = re.findall(r"^### (.+)$", section, re.M)
        assert set(headings) <= {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}, headings
    assert re.findall(r"^### (.+)$", sections[1], re.M) == ["Added", "Changed", "Fixed"]
    release = next(s for s in sections if s.startswith("0.2.0"))
    assert len(release.splitlines()) <= 150


@pytest.mark.slow  # the real default embedding model
def test_readme_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's LlamaIndex example, as written, over a folder ``contracts`` of look-alike contracts: it prints
    the top 8 hits, each a file of that folder with exact offsets, the first from the contract the question names."""
    from llama_index_sac import synthetic_contracts

    benchmark = synthetic_contracts(n_documents=8)
    folder = tmp_path / "contracts"
    folder.mkdir()
    for doc_id, text in benchmark.documents.items():
        (folder / doc_id.replace("/", "_")).write_text(text, encoding="utf-8")
    named = next(d for d in benchmark.documents if "acme" in d)  # the question names Acme Corp
    code = re.search(r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S)
    assert code is not None
    monkeypatch.chdir(tmp_path)
    exec(compile(code.group(1), "README.md", "exec"), {})
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 8
    for line in lines:
        path, start, end, _ = line.split(" ")
        text = Path(path).read_text(encoding="utf-8")
        assert Path(path).resolve().parent == folder.resolve() and 0 <= int(start) < int(end) <= len(text)
    assert Path(lines[0].split(" ")[0]).name == named.replace("/", "_")
