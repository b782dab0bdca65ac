"""Command-line options read from the pydantic fields they set, shared by the applications' commands.

An option that sets a model's field is declared with :func:`field_option`: its help text is the field's description,
its bounds the field's, and the default it names the field's default, so the command line never restates a default
or a limit. The value is then validated by the model itself (one ``error:`` line on a bad value).
"""

from __future__ import annotations

from typing import Any, Literal

import typer
from llama_index.core.bridge.pydantic import BaseModel

__all__ = ["bound", "field_default", "field_option"]


def field_default(model: type[BaseModel], name: str) -> Any:
    """The default of ``model``'s field ``name`` (its default factory called)."""
    return model.model_fields[name].get_default(call_default_factory=True)


def bound(model: type[BaseModel], name: str, side: Literal["min", "max"]) -> int | None:
    """The inclusive integer bound of ``model``'s integer field ``name`` (from ``gt``/``ge`` or ``lt``/``le``), or
    None (no bound, or not an integer field)."""
    info = model.model_fields[name]
    if "int" not in str(info.annotation):
        return None
    for item in info.metadata:
        if side == "min" and getattr(item, "gt", None) is not None:
            return int(item.gt) + 1
        if side == "min" and getattr(item, "ge", None) is not None:
            return int(item.ge)
        if side == "max" and getattr(item, "lt", None) is not None:
            return int(item.lt) - 1
        if side == "max" and getattr(item, "le", None) is not None:
            return int(item.le)
    return None


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value)) or "none"
    return str(value)


def field_option(model: type[BaseModel], name: str, *param_decls: str, key: str | None = None,
                 default: bool | str = True, **kwargs: Any) -> Any:
    """A ``typer.Option`` for ``model``'s field ``name``: help = the field's description, then ``(key; default
    X)`` (``key``: the dotted setting the option sets; ``X`` the field's default, or ``default`` when it is a string,
    left out when ``default=False`` or the field has none), ``min``/``max`` = the field's integer bounds.
    ``kwargs`` go to ``typer.Option`` (e.g. ``help`` to replace the text)."""
    info = model.model_fields[name]
    notes = [key] if key else []
    value = default if isinstance(default, str) else None
    if default is True and not info.is_required():
        value = _shown(field_default(model, name))
    if value is not None and value not in ("None", "none"):
        notes.append(f"default {value}")
    text = (info.description or name).rstrip(".")
    kwargs.setdefault("help", text + (f" ({'; '.join(notes)})." if notes else "."))
    kwargs.setdefault("min", bound(model, name, "min"))
    kwargs.setdefault("max", bound(model, name, "max"))
    kwargs.setdefault("show_default", False)
    return typer.Option(*param_decls, **kwargs)
