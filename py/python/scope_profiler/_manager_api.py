"""The reference's conveniences over ``ProfileManager`` (scope-profiler 0.7.5):
``instrument()``, ``run()``, ``profile_script()`` / ``run_script()``, ``profile_command()``,
``sample_every()`` and ``setup_from_env()``, and its region handles and factories
(``RegionHandle``, ``RegionFactory``): all Rust, in ``py/src/manager_api.rs``.

Each is reached as a ``ProfileManager`` classmethod (and so as a ``scope_profiler``
module-level function); the functions here take the manager class first. Nothing here runs
per recorded call.
"""

from ._native import SampleEvery as sample_every
from ._native import manager_instrument as instrument
from ._native import manager_profile_command as profile_command
from ._native import manager_profile_script as profile_script
from ._native import manager_run as run
from ._native import manager_run_script as run_script
from ._native import manager_setup_from_env as setup_from_env

__all__ = [
    "instrument",
    "profile_command",
    "profile_script",
    "run",
    "run_script",
    "sample_every",
    "setup_from_env",
]
