"""stable-datasets' dataset builder over ours: a ``BaseDatasetBuilder`` subclass builds its splits with ``se.build``.

A subclass says what the dataset is (``_info``: a :class:`DatasetInfo`), which splits it has
(``_split_generators``: :class:`SplitGenerator` s) and how one split's rows are made
(``_generate_examples(**gen_kwargs)`` yielding ``(key, row)`` pairs). ``Builder(split=...,
processed_cache_dir=...)`` is then the split as a :class:`StableDataset`, built the first time and
found in the catalog at ``processed_cache_dir`` after. Imported from
:mod:`stable_explore.compat.stable_datasets`.

Examples
--------
>>> import tempfile
>>> from stable_explore.compat.stable_datasets import DatasetInfo, Features, Value
>>> class Squares(BaseDatasetBuilder):
...     def _info(self):
...         return DatasetInfo(features=Features({"x": Value("int64")}))
...     def _split_generators(self):
...         return [SplitGenerator(name=Split.TRAIN, gen_kwargs={"n": 3})]
...     def _generate_examples(self, n):
...         yield from ((i, {"x": i * i}) for i in range(n))
>>> [row["x"] for row in Squares(split="train", processed_cache_dir=tempfile.mkdtemp())]
[0, 1, 4]
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from typing_extensions import Unpack

from stable_explore import api
from stable_explore.compat._dataset import StableDataset
from stable_explore.errors import InvalidOptionError

if TYPE_CHECKING:
    from stable_explore.api import BuildKwargs
    from stable_explore.compat._cache import Example
    from stable_explore.compat._schema import DatasetInfo, Version

__all__ = ["BaseDatasetBuilder", "Split", "SplitGenerator"]


class Split:
    """Split names."""

    TRAIN = "train"
    TEST = "test"
    VALIDATION = "validation"


@dataclass
class SplitGenerator:
    """One split: its name and the keyword arguments of ``_generate_examples``."""

    name: str
    gen_kwargs: dict[str, object]  # passed on to ``_generate_examples`` as they are


class BaseDatasetBuilder:
    """stable-datasets' builder: ``Builder(split=..., processed_cache_dir=...)`` is the split, built once."""

    VERSION: ClassVar[Version]
    SOURCE: ClassVar[Mapping[str, object]]

    def __new__(  # type: ignore[misc]  # not an instance of the class: the dataset, as stable-datasets' builders give
        cls, split: str = Split.TRAIN, processed_cache_dir: str | Path | None = None, **options: Unpack[BuildKwargs]
    ) -> StableDataset:
        """The split as a :class:`StableDataset` (see :meth:`as_dataset`), as stable-datasets' builders return."""
        return super().__new__(cls).as_dataset(split, processed_cache_dir, **options)

    def as_dataset(
        self, split: str, processed_cache_dir: str | Path | None = None, **options: Unpack[BuildKwargs]
    ) -> StableDataset:
        """The split, built with :func:`stable_explore.build` into a catalog at ``processed_cache_dir`` (once)."""
        info = self._info()
        generators = {g.name: g for g in self._split_generators()}
        if split not in generators:
            msg = f"no split {split!r}; the builder has {sorted(generators)}"
            raise InvalidOptionError(msg)
        if "kwargs" in options:
            msg = (
                f"as_dataset({split!r}, kwargs=...): the generator's keyword arguments are the split's gen_kwargs "
                f"({sorted(generators[split].gen_kwargs)}); set them in _split_generators"
            )
            raise InvalidOptionError(msg)
        name = f"{type(self).__name__.strip('_').lower()}-{split}"
        settings: BuildKwargs = {"progress": False, **options, "kwargs": dict(generators[split].gen_kwargs)}
        built = api.build(self._generate_examples, info.features, name=name, home=processed_cache_dir, **settings)
        return StableDataset.of(built, info)

    def _info(self) -> DatasetInfo:
        raise NotImplementedError

    def _split_generators(self) -> list[SplitGenerator]:
        raise NotImplementedError

    def _generate_examples(self, **kwargs: object) -> Iterator[Example]:
        raise NotImplementedError
