"""``python -m scope_profiler ...`` is the ``scope-profiler`` command; importing this module
(``import scope_profiler.__main__``) runs nothing and exposes ``main``."""

from ._cli import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
