"""Option bags of ``setup()``/``session()`` (scope-profiler 0.7.5's ``ProfilingOptions`` and its
``MemrayOptions`` / ``GPUOptions`` / ``HDF5Options`` groups) and the TOML settings file
(``config_path=``, ``load_profiling_config``).

Dataclasses, so a module of their own: ``import scope_profiler`` does not load
``dataclasses`` (and ``inspect`` with it); the first use of an option bag or of a TOML file
does (issue 15's import target).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, ClassVar

from ._native import unknown_setting_error
from ._settings import ALL_DEFAULTS, CONFIG_FIELDS


@dataclass
class _OptionGroup:
    _FIELD_MAP: ClassVar[dict[str, str]] = {}

    def to_kwargs(self) -> dict:
        return {
            self._FIELD_MAP[f.name]: value
            for f in fields(self)
            if (value := getattr(self, f.name)) is not None
        }


@dataclass
class MemrayOptions(_OptionGroup):
    enabled: bool | None = None
    path: str | None = None
    native_traces: bool | None = None
    trace_python_allocators: bool | None = None
    follow_fork: bool | None = None

    _FIELD_MAP: ClassVar[dict[str, str]] = {
        "enabled": "use_memray",
        "path": "memory_profile_path",
        "native_traces": "memray_native_traces",
        "trace_python_allocators": "memray_trace_python_allocators",
        "follow_fork": "memray_follow_fork",
    }


@dataclass
class GPUOptions(_OptionGroup):
    timing: bool | None = None
    backend: Any = None
    nvtx: bool | None = None
    sync_on_exit: bool | None = None

    _FIELD_MAP: ClassVar[dict[str, str]] = {
        "timing": "use_gpu_timing",
        "backend": "gpu_timing_backend",
        "sync_on_exit": "gpu_sync_on_exit",
        "nvtx": "use_nvtx",
    }


@dataclass
class HDF5Options(_OptionGroup):
    compression: str | None = None
    compression_level: int | None = None
    chunk_size: int | None = None

    _FIELD_MAP: ClassVar[dict[str, str]] = {
        "compression": "hdf5_compression",
        "compression_level": "hdf5_compression_level",
        "chunk_size": "hdf5_chunk_size",
    }


_OPTION_GROUPS: dict[str, type[_OptionGroup]] = {
    "memray": MemrayOptions,
    "gpu": GPUOptions,
    "hdf5": HDF5Options,
}


def _options_to_kwargs(self) -> dict:
    """The flat settings this bag sets (groups expanded; a setting given twice: ValueError)."""
    kwargs = {
        f.name: value
        for f in fields(self)
        if f.name not in _OPTION_GROUPS and (value := getattr(self, f.name)) is not None
    }
    for name in _OPTION_GROUPS:
        group = getattr(self, name)
        for key, value in (group.to_kwargs() if group is not None else {}).items():
            if key in kwargs:
                raise ValueError(
                    f"{key!r} is set both directly and on the {name!r} option group; "
                    "set it in one place",
                )
            kwargs[key] = value
    return kwargs


#: A reusable bag of ``setup()`` settings: every flat setting (``ALL_DEFAULTS``' names) and
#: the groups ``memray``, ``gpu``, ``hdf5``, each ``None`` = unset.
ProfilingOptions: Any = make_dataclass(
    "ProfilingOptions",
    [(name, Any, field(default=None)) for name in ALL_DEFAULTS]
    + [(name, Any, field(default=None)) for name in _OPTION_GROUPS],
    namespace={"to_kwargs": _options_to_kwargs, "__module__": __name__},
)


def load_profiling_config(path) -> dict:
    """The ``[profiling]`` table (or top-level table) of a TOML settings file."""
    import tomllib

    config_path = Path(path)
    try:
        with config_path.open("rb") as stream:
            raw = tomllib.load(stream)
    except OSError as exc:
        raise ValueError(f"Could not read profiling config {path!r}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"Invalid profiling TOML {path!r}: {exc}") from exc
    settings = raw.get("profiling", raw)
    if not isinstance(settings, dict):
        raise ValueError("Profiling config [profiling] must be a TOML table")
    flat = {k: v for k, v in settings.items() if k not in _OPTION_GROUPS}
    for name, group_cls in _OPTION_GROUPS.items():
        table = settings.get(name)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ValueError(f"Profiling setting {name!r} must be a TOML table")
        unknown = sorted(set(table) - set(group_cls._FIELD_MAP))
        if unknown:
            raise ValueError(f"Unknown [{name}] profiling setting(s): {', '.join(unknown)}")
        for key, value in table.items():
            flat_key = group_cls._FIELD_MAP[key]
            if flat_key in flat:
                raise ValueError(
                    f"Profiling setting {flat_key!r} is set both directly and as {name}.{key}",
                )
            flat[flat_key] = value
    unknown_flat = set(flat) - CONFIG_FIELDS
    if unknown_flat:
        raise ValueError(unknown_setting_error(unknown_flat))
    return flat
