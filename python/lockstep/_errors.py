"""lockstep's error type and the lazy torch import every module shares."""

import sys

class LockstepError(SystemExit):
    """A protocol or environment error: exits the trainer with lockstep's code.

    A subclass of SystemExit, so an uncaught one ends the process with
    ``code`` (2: a bad ``LOCKSTEP_*`` value; 3: the environment cannot honour
    the contract) and nothing else; the message is printed to stderr when
    the error is raised. ``str(error)`` is the message.
    """

    def __init__(self, message, code=2):
        super().__init__(code)
        self.message = message

    def __str__(self):
        return self.message


def _fail(message, code=2):
    print("lockstep: " + message, file=sys.stderr, flush=True)
    raise LockstepError(message, code)


def _torch():
    """The torch module, or None when it is not installed."""
    try:
        import torch  # lazy: the probe functions run without it
    except ImportError:
        return None
    return torch
