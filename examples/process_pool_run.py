"""An ordinary script whose work happens in worker processes, profiled whole by ``run``.

    scope-profiler run -o pool_run.h5 examples/process_pool_run.py
    scope-profiler summary pool_run.h5     # rank 0: this process, then one rank per worker

The script opens no session: ``scope-profiler run`` profiles this process and follows the
Python processes it starts (here the workers of a ``ProcessPoolExecutor`` under ``spawn``
and a ``python -c`` helper started with ``subprocess``), each into its own file, merged at
the end into the output, one rank block per process; the file's metadata ``processes``
names each rank's process and the summary heads each rank with it. ``scope-profiler run
--no-follow`` records this process only. (Run with plain ``python`` it just runs.)
"""

import concurrent.futures
import multiprocessing
import subprocess
import sys

from scope_profiler import profile, profile_region

N_TASKS = 8
HELPER = (
    "import sys\n"
    "from scope_profiler import profile_region\n"
    "with profile_region('helper.format'):\n"
    "    print(f'total {sum(map(int, sys.argv[1:]))}')\n"
)


@profile
def simulate(seed: int) -> int:
    with profile_region("simulate.steps"):
        return sum((seed * i) % 7 for i in range(20_000))


def main() -> None:
    with profile_region("prepare"):
        seeds = list(range(N_TASKS))
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=context) as pool:
        results = list(pool.map(simulate, seeds))
    with profile_region("report"):
        helper = [sys.executable, "-c", HELPER, *map(str, results)]
        print(subprocess.run(helper, capture_output=True, text=True, check=True).stdout.strip())


if __name__ == "__main__":
    main()
