"""Hypothesis strategies that build valid models from the models' own field declarations, so a
field someone adds is covered without touching this file."""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic.fields import FieldInfo

from goal_convergence.models import Model

MAX_INT = 2**53 - 1  # what a JSON document holds exactly (see files.parse_json)


def _constraints(metadata: list[Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for item in metadata:
        if isinstance(item, FieldInfo):
            found.update(_constraints(item.metadata))
        for key in ("ge", "gt", "le", "lt", "min_length", "pattern"):
            if getattr(item, key, None) is not None:
                found[key] = getattr(item, key)
    return found


def _number(kind: type, c: dict[str, Any]) -> st.SearchStrategy:
    if kind is int:
        low = c.get("ge", c["gt"] + 1 if "gt" in c else -MAX_INT)
        return st.integers(low, c.get("le", MAX_INT))
    return st.floats(min_value=c.get("ge", c.get("gt", -1e12)), max_value=c.get("le", 1e12),
                     exclude_min="gt" in c, allow_nan=False, allow_infinity=False)


def for_type(tp: Any, metadata: list[Any] | None = None) -> st.SearchStrategy:
    metadata = list(metadata or [])
    origin = get_origin(tp)
    if origin is Annotated:
        base, *extra = get_args(tp)
        return for_type(base, metadata + extra)
    if origin in (Union, types.UnionType):
        return st.one_of([for_type(a, [] if a is type(None) else metadata) for a in get_args(tp)])
    if origin is Literal:
        return st.sampled_from(get_args(tp))
    if origin is list:
        return st.lists(for_type(get_args(tp)[0]), min_size=_constraints(metadata).get("min_length", 0), max_size=2)
    if origin is dict:
        return st.dictionaries(st.text(max_size=6), for_type(get_args(tp)[1]), max_size=2)
    c = _constraints(metadata)
    if tp is type(None):
        return st.none()
    if tp is bool:
        return st.booleans()
    if tp in (int, float):
        return _number(tp, c)
    if tp is str:
        if "pattern" in c:
            return st.from_regex(c["pattern"], fullmatch=True).filter(lambda s: len(s) >= c.get("min_length", 0))
        return st.text(min_size=c.get("min_length", 0), max_size=12)
    if isinstance(tp, type) and issubclass(tp, Model):
        return models(tp)
    raise TypeError(f"no strategy for {tp!r}")


def _build(cls: type[Model], kwargs: dict[str, Any]) -> Model | None:
    try:
        return cls(**kwargs)
    except ValidationError:  # a model-level rule (e.g. coverage needs a threshold): draw again
        return None


_MODELS: dict[type[Model], st.SearchStrategy] = {}


def models(cls: type[Model]) -> st.SearchStrategy:
    """Valid instances of ``cls``: every field drawn within its declared constraints."""
    if cls not in _MODELS:
        hints = typing.get_type_hints(cls, include_extras=True)
        required, optional = {}, {}
        for name, field in cls.model_fields.items():
            strategy = st.deferred(lambda h=hints[name], f=field: for_type(h, list(f.metadata)))
            (required if field.is_required() else optional)[name] = strategy
        _MODELS[cls] = (st.fixed_dictionaries(required, optional=optional)
                        .map(lambda kw: _build(cls, kw)).filter(lambda m: m is not None))
    return _MODELS[cls]
