"""Blocks of work in this process or on Dask: one helper every long computation maps its blocks through.

`scheduler=None` (the default) runs the blocks here, one after another: for the vectorized kernels
that is the fastest way on one machine, since a Dask cluster's start-up costs more than most runs.
`scheduler="local"` (or `workers=N`) starts a `distributed.LocalCluster` of worker processes on this
machine; `scheduler="tcp://host:8786"` uses an existing cluster (`dask scheduler`, `dask worker`; its
workers need the same dtsim installed). Results come back in block order, whichever worker ran
them, and a block computes the same numbers wherever it runs, so the outcome does not depend on
the scheduler.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from dtsim.errors import ScenarioError

SCHEDULERS = "local, or a scheduler address tcp://host:port"
MAX_WORKERS_PER_CORE = (
    4  # more local worker processes than this only queue for the cores (and take minutes to start)
)


def check_scheduler(scheduler: str | None, workers: int | None) -> None:
    """A clear error for a scheduler that is not one of the forms, or a worker count below 1."""
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ScenarioError([("--workers", workers, "must be a whole number ≥ 1")])
    most = MAX_WORKERS_PER_CORE * (os.cpu_count() or 1)
    if workers is not None and workers > most:
        raise ScenarioError(
            [
                (
                    "--workers",
                    workers,
                    f"a local cluster on this machine's {os.cpu_count()} cores takes at most {most} worker "
                    "processes; for more, start a cluster and give --scheduler tcp://host:8786",
                )
            ]
        )
    if scheduler is None:
        return
    if scheduler != "local" and not (scheduler.startswith("tcp://") and len(scheduler) > 6):
        raise ScenarioError([("--scheduler", scheduler, f"must be {SCHEDULERS}")])
    if workers is not None and scheduler != "local":
        raise ScenarioError(
            [("--workers", workers, "starts a local cluster; an existing one has its own workers")]
        )


@contextmanager
def dask_client(scheduler: str | None, workers: int | None):
    """A dask.distributed Client for the scheduler (a LocalCluster it starts and stops, or an existing
    cluster it connects to), or a clear error when Dask is missing or the scheduler cannot be reached."""
    import logging

    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ScenarioError(
            [("--scheduler", scheduler or "local", "needs Dask: python3 -m pip install 'dtsim[dask]'")]
        ) from None
    if scheduler is None or scheduler == "local":
        n = workers or os.cpu_count() or 1
        cluster = LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        raise ScenarioError(
            [("--scheduler", scheduler, f"cannot reach a Dask scheduler there ({exc})")]
        ) from None
    with client:
        yield client


def block_ranges(
    count: int, scheduler: str | None, workers: int | None, parts: int = 32
) -> list[tuple[int, int]]:
    """Items 0..count−1 in blocks: one item a block in this process (progress after each), about
    `parts` blocks on Dask (enough for the workers to share, few enough to keep the overhead low)."""
    step = 1 if scheduler is None and workers is None else max(1, count // parts)
    return [(a, min(count, a + step)) for a in range(0, count, step)]


def map_blocks(
    func: Callable[..., Any],
    blocks: Sequence[tuple[int, int]],
    scheduler: str | None = None,
    workers: int | None = None,
    kwargs: Mapping[str, Any] | None = None,
) -> Iterator[tuple[tuple[int, int], Any]]:
    """((start, stop), func(start=…, stop=…, **kwargs)) for every block, in block order."""
    check_scheduler(scheduler, workers)
    kwargs = dict(kwargs or {})
    if scheduler is None and workers is None:
        for start, stop in blocks:
            yield (start, stop), func(start=start, stop=stop, **kwargs)
        return
    with dask_client(scheduler, workers) as client:
        futures = [client.submit(func, start=a, stop=b, pure=False, **kwargs) for a, b in blocks]
        try:
            for block, fut in zip(blocks, futures, strict=True):
                yield block, fut.result()
                fut.release()
        finally:
            client.cancel(futures)
