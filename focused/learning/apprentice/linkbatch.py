"""The link payloads of many waiting URLs as flat arrays: re-scoring a frontier without an object per link.

A re-scoring reads every parent's payload of every waiting URL, tens of
thousands of them. Decoded one by one into :class:`LinkPayload` objects, then
unpacked again for the model, they took most of the time of a re-scoring;
:class:`LinkBatch` keeps them as the arrays the model reads (the ids of all
payloads concatenated, their lengths, their side views), and still reads as the
per-URL lists of payloads that any other scorer expects. Scrapy-free.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
import scipy.sparse as sp

from focused.learning.apprentice.countmatrix import csr_from_flat, product_matrix
from focused.learning.apprentice.payload import LinkPayload

__all__ = ["LinkBatch"]


@dataclass(frozen=True, eq=False)
class LinkBatch(Sequence[list[LinkPayload]]):
    """``entry_sizes[i]`` payloads for waiting URL i, in order; payload j has ``lengths[j]`` ids in
    ``ids`` (int32, after those of the payloads before it) and the side views ``side[j]`` (float32, as
    stored; ``None`` when the payloads have none)."""

    entry_sizes: np.ndarray
    lengths: np.ndarray
    ids: np.ndarray
    side: np.ndarray | None

    def __post_init__(self) -> None:
        if int(self.entry_sizes.sum()) != len(self.lengths) or int(self.lengths.sum()) != len(self.ids):
            raise ValueError("link batch sizes do not add up")
        if self.side is not None and len(self.side) != len(self.lengths):
            raise ValueError(f"{len(self.side)} side rows for {len(self.lengths)} link payloads")

    @property
    def n_links(self) -> int:
        return len(self.lengths)

    def owners(self) -> np.ndarray:
        """The waiting URL (entry index) of each payload."""
        return np.repeat(np.arange(len(self.entry_sizes)), self.entry_sizes)

    def matrix(self, n_features: int) -> sp.csr_matrix:
        """The payloads' count matrix, one row each (as ``from_compact`` of their ids)."""
        return csr_from_flat(self.lengths, self.ids, n_features)

    def product_matrix(self, n_features: int) -> sp.csr_matrix:
        """A matrix whose products with a vector are those of :meth:`matrix`, to the last bit, built in
        fewer passes (:func:`~focused.learning.apprentice.countmatrix.product_matrix`): for a model's scores."""
        return product_matrix(self.lengths, self.ids, n_features)

    # -- as a sequence of per-URL payload lists, for scorers that do not read batches --------------

    def __len__(self) -> int:
        return len(self.entry_sizes)

    @overload
    def __getitem__(self, i: int) -> list[LinkPayload]: ...

    @overload
    def __getitem__(self, i: slice) -> list[list[LinkPayload]]: ...

    def __getitem__(self, i: int | slice) -> list[LinkPayload] | list[list[LinkPayload]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        first = int(self.entry_sizes[:i].sum())
        out = []
        start = int(self.lengths[:first].sum())
        for j in range(first, first + int(self.entry_sizes[i])):
            end = start + int(self.lengths[j])
            out.append(LinkPayload(self.ids[start:end], None if self.side is None else self.side[j]))
            start = end
        return out

    def __iter__(self) -> Iterator[list[LinkPayload]]:
        return (self[i] for i in range(len(self)))
