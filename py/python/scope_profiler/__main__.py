"""``python -m scope_profiler ...`` is the ``scope-profiler`` command."""

from ._cli import main

main()
