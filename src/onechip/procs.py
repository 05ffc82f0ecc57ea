"""Child-process plumbing shared by the engines and the bench workers."""

from __future__ import annotations

import ctypes
import signal

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send `sig` to this process when its parent dies (Linux PR_SET_PDEATHSIG).

    Meant as a `preexec_fn`: it runs in the child between fork and exec, so a SIGKILLed onechip still takes
    its children with it.
    """
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, sig)
