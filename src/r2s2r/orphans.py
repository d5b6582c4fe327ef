"""``exit_with_parent``: a worker process ends when the process that started it is gone.

The process pools of demonstration collection, generation and the study's side-by-side stages spawn workers
that hold both ends of their pool's queues. When the parent is killed (SIGKILL, or SIGTERM, which Python does
not turn into a clean shutdown) nothing tells them: a worker finishing an attempt blocks for ever on a full
result pipe, and a study stage (a 30-minute training) runs to its end beside the resumed run that replaces it,
both slowed on a small machine. Each worker calls ``exit_with_parent()`` first: a daemon thread that checks
once a second whether its parent is still the process that spawned it, and ends the worker (exit status 1)
when it is not. Nothing is lost that a resumed run needs: what a worker writes (a study stage's outputs) is
written atomically and resumed from (``r2s2r.atomic``), the rest reaches the disk through the parent; and the
resumed run no longer races an orphan writing into the same stage folder.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

POLL_S = 1.0
THREAD = "r2s2r-exit-with-parent"


def exit_with_parent(poll_s: float = POLL_S) -> None:
    """End this process (``os._exit(1)``) within ``poll_s`` seconds of its parent's death, or at once if the
    parent that spawned it (``multiprocessing.parent_process``) is already gone. Once per process: later calls
    return. In a process multiprocessing did not start (a command's own) it does nothing: a run started with
    ``nohup`` outlives its shell."""
    spawner = multiprocessing.parent_process()
    if spawner is None or any(t.name == THREAD for t in threading.enumerate()):  # a pool may call it per task
        return
    parent = spawner.pid

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(poll_s)
        os._exit(1)

    threading.Thread(target=watch, name=THREAD, daemon=True).start()
