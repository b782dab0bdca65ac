"""caller_stacklevel: a warning of the package points at the first frame outside the package and LlamaIndex."""

from __future__ import annotations

import warnings

from llama_index_sac._warn import _is_internal, caller_stacklevel


def test_internal_modules_by_package_not_by_prefix() -> None:
    for name in ("llama_index_sac", "llama_index_sac.embeddings.model", "llama_index.core.ingestion.pipeline",
                 "asyncio", "asyncio.runners", "concurrent.futures.thread", "tqdm.auto",
                 "llama_index_instrumentation.dispatcher"):
        assert _is_internal(name), name
    for name in ("__main__", "llama_index_myapp", "llama_index_sac_plugins", "asyncio_helpers", "tests.test_warn", ""):
        assert not _is_internal(name), name


def _module(name: str, filename: str, source: str, **names: object) -> dict:
    namespace: dict = {"__name__": name, **names}
    exec(compile(source, filename, "exec"), namespace)
    return namespace


def test_a_user_module_named_like_a_library_is_not_skipped() -> None:
    """``llama_index_myapp`` (user code) calls a ``llama_index_sac`` function that warns: the warning names the
    user module's line, not a line of the package and not this test's."""
    library = _module("llama_index_sac.fake", "/fake/llama_index_sac/fake.py",
                      "def check():\n    warnings.warn('x', UserWarning, stacklevel=caller_stacklevel())\n",
                      warnings=warnings, caller_stacklevel=caller_stacklevel)
    app = _module("llama_index_myapp", "/fake/llama_index_myapp.py", "def run():\n    check()\n",
                  check=library["check"])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        app["run"]()
    assert [(w.filename, w.lineno) for w in record] == [("/fake/llama_index_myapp.py", 2)]
