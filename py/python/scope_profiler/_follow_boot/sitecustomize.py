"""Put first on ``PYTHONPATH`` by ``scope-profiler run`` for the processes of the script it
profiles (``scope_profiler._follow``): record this Python process too, then run the
``sitecustomize`` this module shadows, if there is one.

An interpreter without this version of ``scope_profiler`` runs unprofiled, as it would
without the profiler."""

import os
import sys


def _boot() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    # the program sees the sys.path it would have (PYTHONPATH keeps this directory for the
    # processes it starts in turn)
    sys.path[:] = [p for p in sys.path if not p or os.path.abspath(p) != here]
    try:
        from scope_profiler import _follow
    except ImportError:
        pass
    else:
        _follow.start_from_environment()
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is not None and spec.loader is not None:
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)


_boot()
del _boot
