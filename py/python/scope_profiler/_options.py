"""Option bags of ``setup()``/``session()`` (scope-profiler 0.7.5's ``ProfilingOptions`` and its
``MemrayOptions`` / ``GPUOptions`` / ``HDF5Options`` groups) and the TOML settings file
(``config_path=``, ``load_profiling_config``).

Dataclasses, so a module of their own: ``import scope_profiler`` does not load
``dataclasses`` (and ``inspect`` with it); the first use of an option bag or of a TOML file
does, which keeps the import cheap. Which field sets which flat setting, and a setting given
twice: ``scope_profiler_session::settings`` (``py/src/package/options.rs``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from pathlib import Path
from typing import Any, ClassVar

from ._native import option_bag_kwargs, option_group_fields, option_group_kwargs, settings_of_toml
from ._settings import ALL_DEFAULTS


@dataclass
class _OptionGroup:
    _GROUP: ClassVar[str] = ""

    def to_kwargs(self) -> dict:
        """The flat settings this group sets: its fields that are not None, under their flat
        names (``MemrayOptions(path=p)`` -> ``{"memory_profile_path": p}``)."""
        return option_group_kwargs(self._GROUP, self)


@dataclass
class MemrayOptions(_OptionGroup):
    enabled: bool | None = None
    path: str | None = None
    native_traces: bool | None = None
    trace_python_allocators: bool | None = None
    follow_fork: bool | None = None

    _GROUP: ClassVar[str] = "memray"


@dataclass
class GPUOptions(_OptionGroup):
    timing: bool | None = None
    backend: Any = None
    nvtx: bool | None = None
    sync_on_exit: bool | None = None

    _GROUP: ClassVar[str] = "gpu"


@dataclass
class HDF5Options(_OptionGroup):
    compression: str | None = None
    compression_level: int | None = None
    chunk_size: int | None = None

    _GROUP: ClassVar[str] = "hdf5"


def _options_to_kwargs(self) -> dict:
    """The flat settings this bag sets (groups expanded; a setting given twice: ValueError)."""
    return option_bag_kwargs(self)


#: A reusable bag of ``setup()`` settings: every flat setting (``ALL_DEFAULTS``' names) and
#: the groups ``memray``, ``gpu``, ``hdf5``, each ``None`` = unset.
ProfilingOptions: Any = make_dataclass(
    "ProfilingOptions",
    [(name, Any, field(default=None)) for name in (*ALL_DEFAULTS, *option_group_fields())],
    namespace={"to_kwargs": _options_to_kwargs, "__module__": __name__},
)


def load_profiling_config(path) -> dict:
    """The ``[profiling]`` table (or top-level table) of a TOML settings file, its groups'
    keys as their flat settings (``memray.path`` -> ``memory_profile_path``). ``ValueError``
    for an unreadable or invalid file, a group that is not a table, an unknown key, a
    setting given twice, unknown settings."""
    import tomllib

    try:
        with Path(path).open("rb") as stream:
            raw = tomllib.load(stream)
    except OSError as exc:
        raise ValueError(f"Could not read profiling config {path!r}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"Invalid profiling TOML {path!r}: {exc}") from exc
    return settings_of_toml(raw)  # groups flattened and checked in Rust
