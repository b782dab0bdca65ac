"""scripts/publish_results.py: the goal-1 table (B's DRM@k against half of A's) from a hand-made results dict."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "publish_results", Path(__file__).resolve().parents[1] / "scripts" / "publish_results.py"
)
assert _spec is not None and _spec.loader is not None
publish = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(publish)


def _config(name: str, drm: dict[str, float | None]) -> dict:
    return {"config": {"name": name}, "aggregates": {"overall": {k: {"drm": v} for k, v in drm.items()}}}


def test_goal_table_halves_the_baseline_and_marks_each_k() -> None:
    results = {"configs": [
        _config("base", {"1": 0.4, "2": 0.5, "4": None}),
        _config("sac", {"1": 0.2, "2": 0.3, "4": 0.1}),
    ]}
    assert publish.goal_table(results, "base", "sac").splitlines() == [
        "| | k=1 | k=2 | k=4 |",
        "|---|---:|---:|---:|",
        "| base DRM / 2 | 0.200 | 0.250 | - |",
        "| sac DRM | 0.200 | 0.300 | 0.100 |",
        "| met | yes | no (+0.050) | - |",
    ]
