"""The helper's version: the lockstep binary's it ships with.

CMakeLists.txt refuses to configure when this differs from its
``project(lockstep VERSION ...)``, and the binary refuses (exit 3) a
trainer report written by a helper of another version.
"""

__version__ = "0.1.0"
