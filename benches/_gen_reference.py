"""Write the three benchmark profiles with the reference package (run with its Python).

usage: python _gen_reference.py KIND PATH   (KIND: single | threads | tasks)
* single : 500k iterations of four nested regions on one thread (2M events)
* threads: 8 threads x 250k events (62.5k iterations of four nested regions each)
* tasks  : 10 gathers of 10k tasks, each task four nested regions (100k task lanes, 400k events)
"""

import sys
import threading

import scope_profiler as sp


def nested(a, b, c, d):
    with a, b, c, d:
        pass


def main(kind, path):
    if kind == "single":
        sp.setup(file_path=path, buffer_limit=1 << 20)
        regs = [sp.region(n) for n in ("outer", "middle", "inner", "leaf")]
        for _ in range(500_000):
            nested(*regs)
    elif kind == "threads":
        sp.setup(file_path=path, track_threads=True, buffer_limit=1 << 17)
        regs = [sp.region(n) for n in ("outer", "middle", "inner", "leaf")]

        def work():
            for _ in range(62_500):
                nested(*regs)

        threads = [threading.Thread(target=work, name=f"w{i}") for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    elif kind == "tasks":
        import asyncio

        sp.setup(file_path=path, track_async=True, buffer_limit=1 << 17)
        regs = [sp.region(n) for n in ("outer", "middle", "inner", "leaf")]

        async def job():
            nested(*regs)

        async def run():
            for _ in range(10):
                await asyncio.gather(*(job() for _ in range(10_000)))

        asyncio.run(run())
    else:
        raise SystemExit(f"unknown kind {kind}")
    sp.finalize(verbose=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
