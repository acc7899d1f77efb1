"""An asyncio crawler against a local HTTP server, each fetch its own task.

    python examples/asyncio_crawler.py [OUT.h5]
    scope-profiler report OUT.h5 -o crawler.html

A small site (``http.server`` on 127.0.0.1, in a thread of this process, answering every
page after a 20 ms delay) links 1 -> 2,3,4 -> ... up to ``N_PAGES`` pages. The crawler
fetches breadth first with at most ``CONCURRENCY`` requests in flight, one task per page
(``asyncio.open_connection``, plain HTTP/1.0: no third-party client needed).

With ``track_async=True`` each task is a lane: ``fetch`` is held across its ``await``s, so
``await_times`` says how long each fetch was suspended (waiting for the server) and
``durations - await_times`` how long it held the event loop's thread (``parse``). The server
thread's ``serve`` calls are on that thread's own lane.
"""

from __future__ import annotations

import asyncio
import hashlib
import http.server
import re
import sys
import threading
import time

import scope_profiler as sp

N_PAGES = 13
CONCURRENCY = 4
DELAY = 0.02


class Site(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        with sp.region("serve"):
            n = int(self.path.strip("/") or 1)
            time.sleep(DELAY)  # a slow backend
            links = [k for k in (3 * n - 1, 3 * n, 3 * n + 1) if k <= N_PAGES]
            body = "".join(f'<a href="/{k}">page {k}</a>\n' for k in links).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:  # quiet
        pass


def parse(html: bytes) -> list[int]:
    with sp.region("parse"):
        digest = html
        for _ in range(500):  # CPU work on the event loop's thread
            digest = hashlib.sha256(digest).digest()
        return [int(m) for m in re.findall(rb'href="/(\d+)"', html)]


async def fetch(port: int, page: int, limit: asyncio.Semaphore) -> list[int]:
    async with limit:
        with sp.region("fetch"):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET /{page} HTTP/1.0\r\nHost: localhost\r\n\r\n".encode())
            await writer.drain()
            response = await reader.read()
            writer.close()
            await writer.wait_closed()
            return parse(response.split(b"\r\n\r\n", 1)[1])


async def crawl(port: int) -> set[int]:
    with sp.region("crawl"):
        limit = asyncio.Semaphore(CONCURRENCY)
        seen, frontier = {1}, [1]
        while frontier:
            tasks = [asyncio.create_task(fetch(port, p, limit), name=f"page-{p}") for p in frontier]
            frontier = []
            for links in await asyncio.gather(*tasks):
                for k in links:
                    if k not in seen:
                        seen.add(k)
                        frontier.append(k)
        return seen


def main(out: str) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, name="http-server", daemon=True).start()
    try:
        with sp.session(file_path=out, track_async=True, verbose=False, return_results=True) as run:
            pages = asyncio.run(crawl(server.server_address[1]))
    finally:
        server.shutdown()
    fetch_calls = run.results["fetch"][0]
    print(f"crawled {len(pages)} pages into {out}")
    print(
        f"fetch: {fetch_calls.num_calls} calls, {fetch_calls.total_duration:.3f} s in total, "
        f"{fetch_calls.await_times.sum():.3f} s awaiting, "
        f"{(fetch_calls.durations - fetch_calls.await_times).sum():.3f} s held"
    )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "asyncio_crawler.h5")
