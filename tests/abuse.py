"""Inputs that once hung or exhausted dtsim (issue 15), and how the tests measure a refusal."""

from __future__ import annotations

import time
import tracemalloc


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A "billion laughs" YAML document: `levels` nested lists of `width` aliases (9⁹ ≈ 387 million
    strings once expanded) in about 400 characters."""
    parts = ["&a0 [" + ",".join(['"lol"'] * width) + "]"]
    parts += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "[" + ", ".join(parts) + "]"


def timed_and_traced(call):
    """(result, seconds, peak bytes): the time of a plain call, the peak of a second one under
    tracemalloc (which slows a call down, so the two are measured apart)."""
    started = time.perf_counter()
    result = call()
    seconds = time.perf_counter() - started
    tracemalloc.start()
    try:
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return result, seconds, peak


def drop_pending_pages(client) -> None:
    """What a browser's connecting does for the server: the pages a TestClient loaded (it never opens
    their websockets) stop counting against the web page's cap on pages waiting for their browser."""
    from nicegui import Client

    client.portal.call(lambda: Client.prune_instances(client_age_threshold=-1.0))
