"""A batch of scenarios as columns: each entry is a NumPy array of shape () (shared by every row)
or (n,) (one value per row). Broadcasting does the rest; `take` selects rows for one strategy."""

from __future__ import annotations

import numpy as np

from dtsim.assumptions import Assumptions


class Frame(dict):
    """Column mapping with attribute access. `n` is the number of rows."""

    def __init__(self, data=(), n: int = 1):
        super().__init__(data)
        self.n = n

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def take(self, idx: np.ndarray) -> Frame:
        """The rows `idx` (an index array); per-row columns are indexed, shared ones kept."""
        if len(idx) == self.n:
            return self
        out = Frame(n=len(idx))
        for key, value in self.items():
            out[key] = value[idx] if np.ndim(value) == 1 else _rows_of(value, "take", idx)
        return out

    def rows(self, start: int, stop: int) -> Frame:
        """Rows start..stop-1 as views (no copy)."""
        if start == 0 and stop == self.n:
            return Frame(self, n=self.n)
        out = Frame(n=stop - start)
        for key, value in self.items():
            out[key] = value[start:stop] if np.ndim(value) == 1 else _rows_of(value, "rows", start, stop)
        return out

    def as_column(self) -> Frame:
        """Per-row columns reshaped to (n, 1), so a (1, m) array of candidates broadcasts to (n, m)."""
        out = Frame(n=self.n)
        for key, value in self.items():
            out[key] = value[:, None] if np.ndim(value) == 1 else _rows_of(value, "as_column")
        return out


def _rows_of(value, method: str, *args):
    """The assumptions travel with the frame; per-row assumption values (Monte Carlo over them) are
    sliced as the frame's columns are. Any other shared value is kept."""
    return getattr(value, method)(*args) if isinstance(value, Assumptions) else value


def scatter(target: dict[str, np.ndarray], idx: np.ndarray, values: dict, n: int) -> None:
    """Write a strategy's outputs for rows `idx` into full-length output columns."""
    full = len(idx) == n
    for key, value in values.items():
        if full and key not in target:
            # Every row belongs to this strategy: keep its array as it is (shape () when the value
            # is shared by all rows, so a batch that varies one field does not copy the others).
            target[key] = np.asarray(value, dtype=float)
            continue
        column = target.get(key)
        if column is None:
            column = np.full(n, np.nan)
            target[key] = column
        column[idx] = value
