"""Ray set-up failures of ``llama-sac ingest --engine ray``: an address where no cluster answers fails within the
connect timeout with one error, and a Ray installation whose import raises anything is one ``error:`` line."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llama_index_sac.apps.ingest.files import IngestError
from llama_index_sac.apps.ingest.ray_engine import check_ray_address
from llama_index_sac.apps.ingest.run import IngestSettings, ingest
from tests.apps.ingest.test_ingest_cli import write_contracts
from tests.conftest import FakeEmbedding

REPO = Path(__file__).resolve().parents[3]


def test_an_address_where_nothing_listens_fails_at_once() -> None:
    with pytest.raises(ConnectionError, match=r"no Ray cluster answers at 127\.0\.0\.1:1 within 10 s \("
                                              r"ConnectionRefusedError"):
        check_ray_address("127.0.0.1:1")
    with pytest.raises(ConnectionError, match="within 0.5 s"):
        check_ray_address("ray://127.0.0.1:1", timeout=0.5)
    with pytest.raises(ConnectionError, match="is not host:port"):
        check_ray_address("127.0.0.1:port")
    check_ray_address("auto")  # left to Ray


def test_ingest_with_an_unreachable_ray_address_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("ray.data")
    write_contracts(tmp_path / "docs", 2)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")
    with pytest.raises(IngestError, match=r"^--engine ray: no Ray cluster answers at 127\.0\.0\.1:1 within 10 s"):
        ingest([tmp_path / "docs"], f"chroma:{tmp_path / 'store'}", IngestSettings(engine="ray", show_progress=False),
               embed_model=FakeEmbedding())
    assert not (tmp_path / "store").exists()


@pytest.mark.slow
def test_a_ray_whose_import_raises_is_one_error_line(tmp_path: Path) -> None:
    fake = tmp_path / "site" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise RuntimeError('broken ray build\\nsecond line')\n")
    write_contracts(tmp_path / "docs", 2)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path / 'site'}{os.pathsep}{REPO}", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1"}
    env.pop("RAY_ADDRESS", None)
    done = subprocess.run([sys.executable, "-m", "llama_index_sac.apps.cli", "ingest", str(tmp_path / "docs"),
                           "--engine", "ray", "--vector-store", f"chroma:{tmp_path / 'store'}", "--no-progress"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --engine ray: importing Ray failed (RuntimeError: broken ray build); repair or reinstall it "
        "(pip install 'llama-index-sac[ray]')"]
