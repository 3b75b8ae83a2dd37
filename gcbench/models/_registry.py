"""Registries of YAML-facing configs: each kind (distributions, straggling, failures, policies) is one.

A class registers with a decorator; its name is the value of its tag field
(``distribution: Literal["exponential"]``), the name lists and the pydantic
union that parses YAML are derived from the registry, so no list of names is
kept by hand beside the classes.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import Field

from gcbench.models._config import Config


class Registry:
    """Config classes of one kind, by the name their tag field spells, in registration order."""

    def __init__(self, kind: str, tag: str) -> None:
        self.kind, self.tag = kind, tag
        self._classes: dict[str, type[Config]] = {}

    def register(self, cls: type[Config]) -> type[Config]:
        """Class decorator: register ``cls`` under the name its tag field spells."""
        name = tag_value(cls, self.tag)
        if name in self._classes:
            raise ValueError(f"{self.kind} name {name!r} is already registered")
        self._classes[name] = cls
        return cls

    def names(self) -> list[str]:
        """The registered names, in registration order."""
        return list(self._classes)

    def classes(self) -> list[type[Config]]:
        return list(self._classes.values())

    def get(self, name: str) -> type[Config]:
        """The class registered under ``name`` (KeyError when there is none)."""
        return self._classes[name]

    def union(self, exclude: Iterable[str] = ()) -> Any:
        """The pydantic type that parses any registered class (but the excluded names) by its tag."""
        members = tuple(cls for name, cls in self._classes.items() if name not in set(exclude))
        return Annotated[typing.Union[members], Field(discriminator=self.tag)]  # noqa: UP007 (built at run time)


def tag_value(cls: type[Config], tag: str) -> str:
    """The one name a class's ``Literal`` tag field admits."""
    field = cls.model_fields.get(tag)
    names = typing.get_args(field.annotation) if field is not None else ()
    if len(names) != 1 or not isinstance(names[0], str):
        raise TypeError(f"{cls.__name__} needs a field {tag}: Literal['<its name>']")
    return names[0]
