"""The output folder of a run (``llama_index_sac.apps.benchmark.output``): staged, then moved into place."""

from __future__ import annotations

import pytest

from llama_index_sac.apps.benchmark.config import EvaluationSetupError


def test_output_dir_is_staged_then_moved(tmp_path):
    from llama_index_sac.apps.benchmark.output import staged_output_dir

    out = tmp_path / "a" / "b" / "out"
    with staged_output_dir(out) as staging:
        assert staging.parent == out.parent and not out.exists()
        (staging / "results.json").write_text("{}")
    assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
    assert (out / "results.json").read_text() == "{}"
    # an existing folder: unchanged by a failure (KeyboardInterrupt included), same-named files replaced on success
    (out / "notes.txt").write_text("mine")
    for error in (RuntimeError("boom"), KeyboardInterrupt()):
        with pytest.raises(type(error)), staged_output_dir(out) as staging:
            (staging / "results.json").write_text("half")
            raise error
        assert sorted(p.name for p in out.parent.iterdir()) == ["out"]
        assert (out / "results.json").read_text() == "{}"
    with staged_output_dir(out) as staging:
        (staging / "results.json").write_text('{"new": 1}')
    assert (out / "results.json").read_text() == '{"new": 1}' and (out / "notes.txt").read_text() == "mine"
    # a failure with a new folder: neither it nor the parents created for it remain
    with pytest.raises(KeyboardInterrupt), staged_output_dir(tmp_path / "x" / "y" / "out") as staging:
        (staging / "partial.csv").write_text("1")
        raise KeyboardInterrupt
    assert not (tmp_path / "x").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(EvaluationSetupError, match="exists and is not a folder"), staged_output_dir(tmp_path / "file"):
        pass
    with pytest.raises(EvaluationSetupError, match="cannot create output folder"), \
            staged_output_dir(tmp_path / "file" / "sub"):
        pass
