"""The release as a user gets it: a standard build makes a wheel and an sdist, and the wheel installed with
``[offline]`` into a fresh virtual environment (no checkout on the path) runs the README's quickstart."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

import llama_index_sac

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # builds and installs into a new virtual environment (minutes)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: int = 1200) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{cmd} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build", reason="the release test builds with the standard `build` frontend (dev extra)")
    out = tmp_path_factory.mktemp("dist")
    src = tmp_path_factory.mktemp("src") / "repo"
    # Build from a copy of the tracked files only, as a clean clone would.
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        target = src / name
        if (REPO / name).is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target)
    _run([sys.executable, "-m", "build", "--sdist", "--wheel", "--outdir", str(out)], cwd=src)
    return out


def test_wheel_and_sdist_carry_the_package_and_its_data(dist: Path) -> None:
    version = llama_index_sac.__version__
    wheel = dist / f"llama_index_sac-{version}-py3-none-any.whl"
    sdist = dist / f"llama_index_sac-{version}.tar.gz"
    assert wheel.is_file() and sdist.is_file(), sorted(p.name for p in dist.iterdir())
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "llama_index_sac/summarizers/data/legal-terms-v1.json.gz" in names  # the shipped term statistics
    assert "llama_index_sac/py.typed" in names
    assert not any(n.startswith(("tests/", "docs/", "bench/")) for n in names)
    meta = zipfile.ZipFile(wheel).read(f"llama_index_sac-{version}.dist-info/METADATA").decode()
    assert re.search(r"^Provides-Extra: offline$", meta, re.M) and re.search(r"^Provides-Extra: all$", meta, re.M)
    assert f"Version: {version}" in meta
    with tarfile.open(sdist) as tar:
        members = tar.getnames()
    assert f"llama_index_sac-{version}/pyproject.toml" in members
    assert f"llama_index_sac-{version}/llama_index_sac/__init__.py" in members


def _fresh_venv(dist: Path, tmp_path: Path, extras: str, *more: str, **env_vars: str) -> tuple[str, dict[str, str]]:
    """A new virtual environment with the wheel installed as the README says (torch first, the local CPU build),
    its interpreter and the environment to run it with (no checkout on the path, offline)."""
    wheel = dist / f"llama_index_sac-{llama_index_sac.__version__}-py3-none-any.whl"
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    py = str(venv / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", **env_vars)
    _run([py, "-m", "pip", "install", "--quiet", "torch==2.13.0"], cwd=tmp_path, env=env)
    _run([py, "-m", "pip", "install", "--quiet", f"{wheel}[{extras}]", *more], cwd=tmp_path, env=env)
    return py, env


def test_wheel_installs_clean_and_runs_the_quickstart(dist: Path, tmp_path: Path) -> None:
    py, env = _fresh_venv(dist, tmp_path, "offline")
    venv = tmp_path / "venv"
    work = tmp_path / "user"
    work.mkdir()
    shutil.copy2(REPO / "examples" / "quickstart.py", work / "quickstart.py")
    where = _run([py, "-c", "import llama_index_sac; print(llama_index_sac.__file__)"], cwd=work, env=env)
    assert str(venv) in where and str(REPO) not in where  # the installed wheel, not the checkout
    out = _run([py, "quickstart.py"], cwd=work, env=env)
    assert re.search(r"DRM@5", out), out[-2000:]


def test_wheel_runs_the_notebook_outside_the_checkout(dist: Path, tmp_path: Path) -> None:
    """The notebook copied next to a user's work, with nothing of the checkout: it says the published runs are not
    there and runs its live part with the installed package."""
    py, env = _fresh_venv(dist, tmp_path, "offline,cli", "nbclient", "nbformat", "ipykernel",
                          SAC_NOTEBOOK_CACHE=str(tmp_path / "cache"))
    env.pop("SAC_RESULTS_DIR", None)
    work = tmp_path / "user"
    work.mkdir()
    shutil.copy2(REPO / "notebooks" / "legalbench_rag_sac.ipynb", work / "notebook.ipynb")
    code = ("import nbformat; from nbclient import NotebookClient; nb = nbformat.read('notebook.ipynb', as_version=4);"
            " NotebookClient(nb, timeout=900, kernel_name='python3', resources={'metadata': {'path': '.'}}).execute();"
            " print(''.join(o.get('text', '') for c in nb.cells if c.cell_type == 'code' for o in c.outputs))")
    out = _run([py, "-c", code], cwd=work, env=env)
    assert "no published runs here" in out and "SAC lower: True" in out, out[-3000:]
