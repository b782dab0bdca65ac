"""callable_identity: the serialized form of callable options, which the ingestion and summary caches key on."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap

import pytest

from llama_index_sac import RecursiveCharacterNodeParser
from llama_index_sac._callable_identity import callable_identity
from llama_index_sac.summarizers.prompts import chatml_completion_to_prompt


def _make_scaled(n: int):
    return lambda s: len(s) // n


def _make_nested(n: int):
    def length(s: str) -> int:
        return sum(1 for c in s if c.isalnum()) * n
    return length


class _Counter:
    def __init__(self, unit: str) -> None:
        self.unit = unit

    def __repr__(self) -> str:
        return f"_Counter({self.unit!r})"

    def count(self, s: str) -> int:
        return len(s.split(self.unit))


def test_none_and_module_level_functions_are_named_by_import_path() -> None:
    assert callable_identity(None) is None
    assert callable_identity(chatml_completion_to_prompt) == \
        "llama_index_sac.summarizers.prompts.chatml_completion_to_prompt"
    assert callable_identity(len) == "builtins.len"
    assert callable_identity(str) == "builtins.str"


def test_lambdas_that_compute_different_things_differ() -> None:
    # same bytecode and constants, different global names: these two used to share one identity
    a, b = (lambda s: len(s)), (lambda s: sum(s))
    assert callable_identity(a) != callable_identity(b)
    assert callable_identity(lambda s: len(s) + 1) != callable_identity(lambda s: len(s) + 2)


def test_the_same_code_gives_the_same_identity() -> None:
    assert callable_identity(lambda s: len(s)) == callable_identity(lambda s: len(s))
    assert callable_identity(_make_scaled(2)) == callable_identity(_make_scaled(2))
    assert callable_identity(_make_nested(3)) == callable_identity(_make_nested(3))


def test_captured_values_and_defaults_are_part_of_the_identity() -> None:
    assert callable_identity(_make_scaled(2)) != callable_identity(_make_scaled(4))
    assert callable_identity(_make_nested(2)) != callable_identity(_make_nested(3))
    assert callable_identity(lambda s, n=2: len(s) // n) != callable_identity(lambda s, n=4: len(s) // n)
    assert callable_identity(lambda s, *, n=2: len(s) // n) != callable_identity(lambda s, *, n=4: len(s) // n)


def test_partials_and_bound_methods_carry_their_bound_values() -> None:
    def div(s: str, n: int | list[int]) -> int:
        return len(s) // (n if isinstance(n, int) else len(n))
    assert callable_identity(functools.partial(div, n=2)) == callable_identity(functools.partial(div, n=2))
    assert callable_identity(functools.partial(div, n=2)) != callable_identity(functools.partial(div, n=3))
    big, bigger = functools.partial(div, n=list(range(1000))), functools.partial(div, n=list(range(1001)))
    assert len(callable_identity(big) or "") < 600 and callable_identity(big) != callable_identity(bigger)
    assert callable_identity(_Counter(" ").count) == callable_identity(_Counter(" ").count)
    assert callable_identity(_Counter(" ").count) != callable_identity(_Counter(",").count)
    mod = _Counter.__module__
    assert callable_identity(_Counter(" ").count) == f"{mod}._Counter.count@{mod}._Counter:_Counter(' ')"


def test_an_object_without_a_stable_repr_is_never_shared() -> None:
    class Opaque:
        def __call__(self, s: str) -> int:
            return len(s)
    assert callable_identity(Opaque()) != callable_identity(Opaque())
    one = Opaque()
    assert callable_identity(one) == callable_identity(one)


def test_a_callable_object_is_named_by_its_repr() -> None:
    class Per:
        def __init__(self, unit: int) -> None:
            self.unit = unit

        def __repr__(self) -> str:
            return f"Per({self.unit})"

        def __call__(self, s: str) -> int:
            return len(s) // self.unit
    assert callable_identity(Per(4)) == callable_identity(Per(4))
    assert callable_identity(Per(4)) != callable_identity(Per(3))
    assert (callable_identity(Per(4)) or "").endswith("Per:Per(4)")
    assert callable_identity(Per(4).__call__) == callable_identity(Per(4).__call__)


_SCRIPT = textwrap.dedent("""
    import functools
    from llama_index_sac._callable_identity import callable_identity
    words = frozenset({"alpha", "beta", "gamma", "delta"})
    def outer(n):
        def g(s):
            return sum(1 for w in s.split() if w in words) + len([c for c in s if c.isdigit()]) * n
        return g
    print(callable_identity(lambda s: len({c for c in s if c in {"a", "b", "c"}})))
    print(callable_identity(outer(2)))
    print(callable_identity(functools.partial(outer(3), )))
    print(callable_identity(lambda s, k=("x", frozenset({"p", "q", "r"})): len(s)))
""")


@pytest.mark.slow  # many processes or a large input: minutes in the whole suite
def test_identities_are_the_same_in_every_process() -> None:
    """Nested code (comprehensions), sets and frozensets: their repr holds an address or depends on the hash seed,
    so a naive key changed with every run and a cache keyed on it was never reused."""
    outputs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, check=True)
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1] == outputs[2]
    lines = outputs[0].splitlines()
    assert len(lines) == 4 and len(set(lines)) == 4
    assert all("0x" not in line for line in lines)


def test_parser_settings_tell_length_functions_apart() -> None:
    """The LlamaIndex ingestion cache hashes ``to_dict()``: two parsers that cut differently must not share it."""
    by_chars = RecursiveCharacterNodeParser(chunk_size=50, chunk_overlap=0, length_function=lambda s: len(s))
    by_sum = RecursiveCharacterNodeParser(chunk_size=50, chunk_overlap=0, length_function=lambda s: sum(map(ord, s)))
    assert by_chars.to_dict()["length_function"] != by_sum.to_dict()["length_function"]
    same = RecursiveCharacterNodeParser(chunk_size=50, chunk_overlap=0, length_function=lambda s: len(s))
    assert by_chars.to_dict() == same.to_dict()
