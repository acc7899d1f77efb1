"""The reference's conveniences over ``ProfileManager`` (scope-profiler 0.7.5): region
handles and factories (``RegionHandle``, ``RegionFactory``: each ``with`` is a recorded
call), ``instrument()``, ``run()``, ``profile_script()`` / ``run_script()``,
``profile_command()``, ``sample_every()`` and ``setup_from_env()``. The rules these follow
(which functions ``instrument()`` decorates, which timesteps ``sample_every()`` records)
are Rust, in ``py/src/package/manager_api.rs``.

Each is reached as a ``ProfileManager`` classmethod (and so as a ``scope_profiler``
module-level function); the functions here take the manager class first. Nothing here runs
per recorded call but a handle's ``with``, which looks its region up and enters it.
"""

from __future__ import annotations

import itertools
import os
import sys
from contextvars import ContextVar
from functools import partial

from ._native import check_sampling, check_script, sampled_step

# typing.TYPE_CHECKING without importing typing, which `import scope_profiler` does not need
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Numbers the handles' context variables (their names only).
_handles = itertools.count()


class RegionHandle:
    """A region definition that survives ``setup()`` (``ProfileManager.define_region``):
    ``with handle:`` enters the region of that name in the manager's *current* run (looked
    up at entry, so a handle made before ``setup()`` records once set up) and exits the same
    region object even across a ``setup(replace=True)``. Entered regions are kept per
    context (a ``ContextVar`` per handle), so any thread or task may use the handle."""

    def __init__(self, manager, name, functions=None, tags=None) -> None:
        functions = None if functions is None else tuple(functions)
        self.name, self._tags = name, None if tags is None else tuple(tags)
        # only the arguments given: `region(name)` alone is the lookup's native path
        given = {k: v for k, v in (("functions", functions), ("tags", self._tags)) if v is not None}
        self._lookup = partial(manager.region, name, **given)
        self._entered: ContextVar[tuple] = ContextVar(f"sp_region_{next(_handles)}", default=())

    def __enter__(self):
        region = self._lookup()
        entered = region.__enter__()
        self._entered.set((*self._entered.get(), region))
        return entered

    def __exit__(self, exc_type, exc_value, traceback):
        stack = self._entered.get()
        if not stack:
            raise RuntimeError(f"region handle {self.name!r} exited without being entered")
        self._entered.set(stack[:-1])
        return stack[-1].__exit__(exc_type, exc_value, traceback)

    def __repr__(self) -> str:
        return f"RegionHandle({self.name!r}, tags={self._tags!r})"


class RegionFactory:
    """A reusable region definition (``ProfileManager.region_factory``): ``factory()`` is a
    new :class:`RegionHandle`; ``factory(**metadata)`` runs that call inside
    ``manager.metadata(**metadata)`` (the block entered first), so it carries those values."""

    def __init__(self, manager, name, tags=None) -> None:
        self._manager, self.name = manager, name
        self._tags = None if tags is None else tuple(tags)

    def __call__(self, **metadata):
        scope = self._manager.metadata(**metadata) if metadata else None
        handle = RegionHandle(self._manager, self.name, tags=self._tags)
        return handle if scope is None else _FactoryCall(scope, handle)

    def __repr__(self) -> str:
        return f"RegionFactory({self.name!r}, tags={self._tags!r})"


class _FactoryCall:
    """``factory(**metadata)``: the metadata block, and the region inside it."""

    def __init__(self, scope, handle) -> None:
        self._scope, self._handle = scope, handle

    def __enter__(self):
        self._scope.__enter__()
        try:
            return self._handle.__enter__()
        except BaseException:
            self._scope.__exit__(None, None, None)
            raise

    def __exit__(self, exc_type, exc_value, traceback):
        try:
            return self._handle.__exit__(exc_type, exc_value, traceback)
        finally:  # the block's error, if any, wins (chained to the region's)
            self._scope.__exit__(exc_type, exc_value, traceback)


def instrument(manager, module, *, include=("*",), exclude=(), prefix=None, tags=None) -> dict:
    """Decorate ``module``'s own module-level functions with ``manager.profile`` in place.

    A function is decorated when its name matches a glob of ``include`` and none of
    ``exclude`` (``fnmatch``); its region is ``f"{prefix}.{name}"``, or
    ``f"{module.__name__}.{name}"`` without ``prefix``, with ``tags`` (as ``profile``).
    Classes, builtins and functions ``profile`` already wraps are left alone. Returns
    ``{name: wrapper}`` of what was replaced; ``TypeError`` for globs that are not strings."""
    import inspect

    from ._native import instrument_plan

    functions = {
        name: function
        for name, function in list(vars(module).items())
        # not a function, or @profile's wrapper of a coroutine/generator function
        if inspect.isfunction(function) and not hasattr(function, "_scope_profiler_wrapper")
    }
    changed = {}
    module_name = getattr(module, "__name__", "module")
    for name, region_name in instrument_plan(
        list(functions), include, exclude, prefix, module_name
    ):
        wrapped = manager.profile(region_name, tags=tags)(functions[name])
        setattr(module, name, wrapped)
        changed[name] = wrapped
    return changed


def run(manager, func, *args, output=None, **session_kwargs):
    """``func(*args)`` inside ``manager.session(**session_kwargs)`` (``verbose=False`` and
    ``return_results=True`` unless given; ``output`` as ``setup(output=)`` when not None).
    Returns ``func``'s value; the results are in ``manager.last_results()``. Keywords are
    the session's, never ``func``'s (as in the reference)."""
    options = session_kwargs
    if output is not None:
        options["output"] = output
    options.setdefault("verbose", False)
    options.setdefault("return_results", True)
    with manager.session(**options) as session:
        value = func(*args)
    manager._last_results = session.results
    return value


def run_script(manager, script_path, script_args=None, region_name=None, recursive=True) -> None:
    """Run the script at ``script_path`` as ``__main__`` in the manager's current run
    (``sys.argv`` = the script, absolute, and ``script_args``; its directory first on
    ``sys.path``; both restored afterwards). With ``recursive``, inside a region named
    ``region_name`` (default: the script's file name), as the reference's ``run
    --recursive`` root; the function-level tracing itself is the run's ``recursive_profile``
    setting. ``FileNotFoundError`` when it is not a file; the script's exceptions propagate."""
    script_path = os.path.abspath(os.fspath(script_path))
    check_script(script_path)
    saved_argv = sys.argv
    sys.argv = [script_path, *(os.fspath(a) for a in (script_args or ()))]
    script_dir = os.path.dirname(script_path)
    added = script_dir not in sys.path
    if added:
        sys.path.insert(0, script_dir)
    import runpy

    try:
        if recursive:
            # made by the manager's Python path: this module's line is not its source
            name = region_name or os.path.basename(script_path)
            with manager._create_region(name):
                runpy.run_path(script_path, run_name="__main__")
        else:
            runpy.run_path(script_path, run_name="__main__")
    finally:
        sys.argv = saved_argv
        if added and script_dir in sys.path:
            sys.path.remove(script_dir)


def profile_script(manager, script_path, *, script_args=None, output=None, **setup_kwargs):
    """``setup(**setup_kwargs)``, :func:`run_script` (traced as the run's
    ``recursive_profile`` says), then ``finalize(verbose=False, return_results=True)``
    closing open calls, even when the script raises (its exception, ``SystemExit``
    included, propagates after). Returns the ``ProfilingResults``."""
    options = setup_kwargs
    if output is not None:
        options["output"] = output
    manager.setup(**options)
    recursive = bool(manager.get_config().recursive_profile)
    try:
        run_script(manager, script_path, script_args=script_args, recursive=recursive)
    finally:
        results = manager._finalize(close_open=True, verbose=False, return_results=True)
    return results


def profile_command(command, *, output=None, recursive=False, all=False, mpi_calls=False):
    """Run ``command`` (a Python script and its arguments; a leading ``python`` is dropped)
    as ``python -m scope_profiler run -q -o OUTPUT [--recursive] [--all] ...`` in a child
    process and wait for it. Returns its ``subprocess.CompletedProcess`` (output not
    captured) with ``profile_results``: the profile read back (``load``) when the command
    exited 0 and wrote a file that is not HTML, else None. ``ValueError`` when no script is
    given; ``NotImplementedError`` for ``mpi_calls=True`` (MPI call profiling is not
    supported)."""
    import subprocess

    from ._native import profile_command_argv

    argv, output_path = profile_command_argv(
        [os.fspath(value) for value in command],
        sys.executable,
        None if output is None else os.fspath(output),
        bool(recursive),
        bool(all),
        bool(mpi_calls),
    )
    completed: Any = subprocess.run(argv, check=False)
    completed.profile_results = None
    if completed.returncode == 0 and os.path.exists(output_path):
        from .profile_io import FORMAT_HTML, load, profile_format

        if profile_format(output_path) != FORMAT_HTML:
            completed.profile_results = load(output_path)
    return completed


class SampleEvery:
    """``sample_every(every, start)``: a context manager yielding ``profile_step(timestep)``,
    itself a context manager that resumes recording for timestep ``start`` and every
    ``every``-th one after it and pauses it for the others (yielding whether the step is
    recorded). On exit the manager's pause state is what it was on entry. ``ValueError``
    on entry unless ``every`` is a positive int and ``start`` an int; ``TypeError`` for a
    timestep that is not an int; a step cannot begin while a region is open (``pause()``'s
    ``RuntimeError``)."""

    def __init__(self, manager, every: int, start: int = 0) -> None:
        self._manager, self._every, self._start = manager, every, start
        self._was_paused = False

    def __enter__(self):
        check_sampling(self._every, self._start)
        self._was_paused = self._manager.get_config().paused
        return self._step

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        if self._was_paused:
            self._manager.pause()
        else:
            self._manager.resume()

    def _step(self, timestep: int) -> _StepScope:
        """``profile_step(timestep)``: the step ``timestep`` (checked when entered)."""
        return _StepScope(self, timestep)


class _StepScope:
    """One step of :class:`SampleEvery`: ``resume()`` (sampled) or ``pause()`` on entry;
    yields whether the step is recorded."""

    def __init__(self, sampling: SampleEvery, timestep: int) -> None:
        self._sampling, self._timestep = sampling, timestep

    def __enter__(self) -> bool:
        sampling = self._sampling
        selected = sampled_step(self._timestep, sampling._every, sampling._start)
        if selected:
            sampling._manager.resume()
        else:
            sampling._manager.pause()
        return selected

    def __exit__(self, exc_type, exc_value, traceback) -> None:
        pass


def setup_from_env(manager, **overrides):
    """``setup()`` from ``SCOPE_PROFILER_*`` variables: ``_CONFIG`` (TOML ``config_path``),
    ``_OUTPUT`` (``output=``), ``_RECURSIVE`` (``recursive_profile``), ``_AUTO_FINALIZE``
    (``auto_finalize``); booleans are true for 1/true/yes/on (any case), false otherwise
    (read by ``scope_profiler_session::environment``). Keywords in ``overrides`` win over
    the environment. Returns the ``ProfilingRun``."""
    from ._native import setup_from_env_settings

    options = overrides
    for name, value in setup_from_env_settings():
        options.setdefault(name, value)
    return manager.setup(**options)
