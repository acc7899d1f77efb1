"""The script of ``scope-profiler run`` as ``__main__``, the way ``python script.py`` and
``python -m module`` run it.

The script's module is put in ``sys.modules["__main__"]`` and left there: the program's end
(``threading``'s exit callbacks, ``atexit`` handlers) comes after the script's last line,
and work a process pool sends to its workers then is pickled by reference to
``__main__``'s functions. ``runpy.run_path``/``run_module`` put the previous ``__main__``
back when the script returns, which would make that work fail. ``__file__`` is absolute,
as ``python`` makes it. A directory or zip file with a ``__main__.py``, or a compiled
``.pyc``, runs through ``runpy.run_path`` (a directory or zip file in the process's own
``__main__``).
"""

from __future__ import annotations

import builtins
import importlib.machinery
import importlib.util
import io
import os
import sys
import types


def run_path(script: str) -> None:
    """Run the file ``script`` as ``__main__`` (exceptions, ``SystemExit`` included,
    propagate)."""
    path = os.path.abspath(script)
    if path.endswith((".pyc", ".pyo")) or os.path.isdir(path) or _is_zip(path):
        import runpy

        runpy.run_path(script, run_name="__main__")
        return
    with io.open_code(path) as source:
        code = compile(source.read(), path, "exec", dont_inherit=True)
    main = _fresh_main(
        __file__=path, __loader__=importlib.machinery.SourceFileLoader("__main__", path)
    )
    exec(code, main.__dict__)


def run_module(name: str) -> None:
    """Run module ``name`` as ``__main__`` (a package: its ``__main__`` submodule), with
    ``sys.argv[0]`` its file, as ``python -m`` does. ``ImportError`` with ``python``'s
    message when there is nothing to run."""
    spec = importlib.util.find_spec(name)
    if spec is None:
        raise ImportError(f"No module named {name!r}", name=name)
    if spec.submodule_search_locations is not None:
        main_spec = importlib.util.find_spec(f"{name}.__main__")
        if main_spec is None:
            raise ImportError(
                f"No module named {name}.__main__; {name!r} is a package and cannot be "
                "directly executed",
                name=name,
            )
        spec = main_spec
    loader = spec.loader
    get_code = getattr(loader, "get_code", None)
    code = get_code(spec.name) if get_code is not None else None
    if code is None:
        raise ImportError(f"No code object available for {spec.name}", name=spec.name)
    if sys.argv:
        sys.argv[0] = spec.origin or name
    main = _fresh_main(
        __file__=spec.origin,
        __loader__=loader,
        __spec__=spec,
        __package__=spec.parent,
        __cached__=spec.cached,
    )
    exec(code, main.__dict__)


def _fresh_main(**attributes: object) -> types.ModuleType:
    """A new ``__main__`` module with these ``attributes``, installed in ``sys.modules``."""
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "__cached__": None, **attributes})
    sys.modules["__main__"] = main
    return main


def _is_zip(path: str) -> bool:
    if path.endswith((".py", ".pyw")):
        return False
    import zipfile

    try:
        return zipfile.is_zipfile(path)
    except OSError:
        return False
