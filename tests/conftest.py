"""Settings every test shares. Test helpers live beside this file (pytest puts tests/ on sys.path, as it does
for every conftest directory without __init__.py): `fakes/` (the one fake vLLM server) and `factories.py`
(plans, boot records and engine states made the way the code makes them)."""

from __future__ import annotations

import signal

# Tests send SIGINT (Ctrl-C) to onechip processes and to themselves. A shell without job control starts
# background commands with SIGINT ignored, children inherit "ignored", and Python then never raises
# KeyboardInterrupt; restoring Python's handler here makes every child start with the default again
# (exec resets handled signals, not ignored ones).
signal.signal(signal.SIGINT, signal.default_int_handler)
