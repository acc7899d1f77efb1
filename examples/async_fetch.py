"""Asyncio tasks as lanes: a crawler gathers six fetches; each holds a region across an
``await`` (the simulated network wait) and parses on the CPU afterwards.

    python examples/async_fetch.py

With ``track_async=True`` every task is a lane: the overlapping ``fetch`` calls are not a
nesting error, each call knows how long its task was suspended inside it
(``await_times``), and ``durations - await_times`` is the time it held the thread.
"""

from __future__ import annotations

import asyncio
import hashlib

from scope_profiler import ProfileManager

region = ProfileManager.profile_region


def parse(payload: bytes) -> str:
    with region("parse"):
        digest = payload
        for _ in range(300):  # CPU-bound
            digest = hashlib.sha256(digest).digest()
        return digest.hex()


async def fetch(url: str, latency: float) -> str:
    with region("fetch"):  # held across the await
        await asyncio.sleep(latency)  # the "network"
        return parse(url.encode())


async def crawl() -> list[str]:
    with region("crawl"):
        urls = [f"https://example.invalid/{i}" for i in range(6)]
        first = asyncio.create_task(fetch(urls[0], 0.05), name="first-page")
        rest = await asyncio.gather(*(fetch(u, 0.01 * (i + 1)) for i, u in enumerate(urls[1:])))
        return [await first, *rest]


def main() -> None:
    with ProfileManager.session(
        file_path="async_fetch.h5", track_async=True, return_results=True, verbose=False
    ) as run:
        asyncio.run(crawl())
    results = run.results
    fetch_calls = results["fetch"][0]
    held = fetch_calls.durations - fetch_calls.await_times
    print(f"{'lane':<40}{'duration':>10}{'await':>10}{'held':>10}")
    for task, d, a, h in zip(
        fetch_calls.task_ids, fetch_calls.durations, fetch_calls.await_times, held
    ):
        print(
            f"{results.lane_label(int(task)):<40}{d * 1e3:>8.2f}ms{a * 1e3:>8.2f}ms{h * 1e3:>8.2f}ms"
        )
    print()
    for task in results.tasks[0]:
        print(task)
    print()
    for row in results.thread_summary():
        print(row)


if __name__ == "__main__":
    main()
