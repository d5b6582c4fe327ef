"""Executors: run generation attempts on workers and hand the results back in key order.

``results(keys)`` takes an iterator of attempt keys and yields one ``AttemptRecord`` per key, in
the order of the keys, whatever order the workers finish in; at most ``window`` attempts are in
flight. A worker that dies (killed, out of memory, crashed in native code) is replaced and the
attempts it held are run again; since an attempt's randomness comes from its key alone, the retry
gives the same episode. ``SerialExecutor`` runs in this process (one worker), ``LocalExecutor``
on worker processes (``spawn``), ``RayExecutor`` on Ray actors (a local Ray instance, or a cluster
at ``address``). The three give byte-identical episodes for the same spec.
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool

from r2s2r.errors import R2S2RError
from r2s2r.generate.attempt import AttemptRecord, GenerationSpec, Worker

MAX_RETRIES = 5  # an attempt in flight when a worker died this many times is a bug, not bad luck


class SerialExecutor:
    """One worker in this process."""

    workers = 1

    def __init__(self, spec: GenerationSpec) -> None:
        self._worker = Worker(spec)

    def results(self, keys: Iterator[int]) -> Iterator[AttemptRecord]:
        for key in keys:
            yield self._worker.run(key)

    def close(self) -> None:
        self._worker.close()


_PROCESS_WORKER: dict[str, Worker] = {}  # in each worker process: its own cell and behaviour


def _init_process(spec: GenerationSpec) -> None:
    from r2s2r.orphans import exit_with_parent

    exit_with_parent()
    _PROCESS_WORKER["w"] = Worker(spec)


def _run_in_process(key: int) -> AttemptRecord:
    return _PROCESS_WORKER["w"].run(key)


class _Ordered:
    """Results that arrive out of order, released in key order."""

    def __init__(self) -> None:
        self.order: list[int] = []
        self.done: dict[int, AttemptRecord] = {}
        self.retries: dict[int, int] = {}

    def take(self, keys: Iterator[int], window: int) -> list[int]:
        """New keys from ``keys`` until ``window`` are outstanding (fewer once ``keys`` runs out)."""
        new = []
        while len(self.order) < window:
            key = next(keys, None)
            if key is None:
                break
            self.order.append(key)
            new.append(key)
        return new

    def retry(self, key: int, why: str) -> None:
        self.retries[key] = self.retries.get(key, 0) + 1
        if self.retries[key] > MAX_RETRIES:
            raise R2S2RError(f"generate: attempt {key} lost its worker {self.retries[key]} times ({why}); giving up")

    def ready(self) -> Iterator[AttemptRecord]:
        while self.order and self.order[0] in self.done:
            yield self.done.pop(self.order.pop(0))


class LocalExecutor:
    """``workers`` processes on this machine; a pool that loses a process is rebuilt."""

    def __init__(self, spec: GenerationSpec, workers: int) -> None:
        self.spec, self.workers = spec, workers
        self.window = 2 * workers
        self.restarts = 0
        self._pool = self._new_pool()

    def _new_pool(self) -> cf.ProcessPoolExecutor:
        ctx = multiprocessing.get_context("spawn")
        return cf.ProcessPoolExecutor(self.workers, ctx, _init_process, (self.spec,))

    def results(self, keys: Iterator[int]) -> Iterator[AttemptRecord]:
        q = _Ordered()
        running: dict[cf.Future, int] = {}
        keys = iter(keys)
        while True:
            broken = not self._submit(q.take(keys, self.window), running)
            if not running and not broken:
                return
            if not broken:  # a pool that broke while idle refuses new work before any future fails
                cf.wait(running, return_when=cf.FIRST_COMPLETED)
            broken |= self._collect(running, q)
            while broken:  # every attempt in flight is lost with the pool: run them again on a new one
                lost = [k for k in q.order if k not in q.done]
                for k in lost:
                    q.retry(k, "a worker process died")
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = self._new_pool()
                self.restarts += 1
                running = {}
                broken = not self._submit(lost, running)
            yield from q.ready()

    def _submit(self, keys: list[int], running: dict[cf.Future, int]) -> bool:
        """Hand ``keys`` to the pool; False if the pool is broken (the keys not taken stay lost)."""
        for key in keys:
            try:
                running[self._pool.submit(_run_in_process, key)] = key
            except BrokenProcessPool:
                return False
        return True

    @staticmethod
    def _collect(running: dict[cf.Future, int], q: _Ordered) -> bool:
        """Move finished futures' records into ``q``; True if one failed with the pool."""
        broken = False
        for f in [f for f in running if f.done()]:
            key = running.pop(f)
            try:
                q.done[key] = f.result()
            except BrokenProcessPool:
                broken = True
        return broken

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """``workers`` Ray actors, each with its own cell and behaviour; a dead actor is replaced.

    Without ``address`` a local Ray instance is started (``RAY_TMPDIR`` and a small object store
    suit small machines); with one, the actors run on that cluster.
    """

    def __init__(self, spec: GenerationSpec, workers: int, address: str | None = None) -> None:
        import ray

        self._ray = ray
        if not ray.is_initialized():
            if address is None:
                os.environ.setdefault("RAY_TMPDIR", "/tmp/ray")
                ray.init(
                    num_cpus=workers,
                    object_store_memory=256 * 1024 * 1024,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            else:
                ray.init(address=address, log_to_driver=False)
        self.spec, self.workers = spec, workers
        self.window = 2 * workers
        self.restarts = 0
        self._actor_cls = ray.remote(num_cpus=1, max_restarts=0)(_RayWorker)
        self._actors = [self._actor_cls.remote(spec) for _ in range(workers)]

    def results(self, keys: Iterator[int]) -> Iterator[AttemptRecord]:
        ray = self._ray
        q = _Ordered()
        idle = list(range(self.workers))
        running: dict = {}  # object ref -> (key, actor index)
        pending: list[int] = []  # keys to (re)submit
        keys = iter(keys)
        while True:
            pending.extend(q.take(keys, self.window))
            while pending and idle:
                a = idle.pop(0)
                k = pending.pop(0)
                running[self._actors[a].run.remote(k)] = (k, a)
            if not running:
                return
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                key, a = running.pop(ref)
                try:
                    q.done[key] = ray.get(ref)
                except ray.exceptions.RayActorError:
                    q.retry(key, "Ray actor died")
                    self._actors[a] = self._actor_cls.remote(self.spec)
                    self.restarts += 1
                    pending.insert(0, key)
                idle.append(a)
            yield from q.ready()

    def close(self) -> None:
        for a in self._actors:
            self._ray.kill(a)
        self._actors = []


class _RayWorker:
    def __init__(self, spec: GenerationSpec) -> None:
        self._worker = Worker(spec)

    def run(self, key: int) -> AttemptRecord:
        return self._worker.run(key)


EXECUTORS = ("local", "ray")


def make_executor(spec: GenerationSpec, executor: str, workers: int, address: str | None = None):
    """``local`` (in-process for one worker, else worker processes) or ``ray``."""
    if executor == "local":
        return SerialExecutor(spec) if workers == 1 else LocalExecutor(spec, workers)
    if executor == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise R2S2RError(
                "--executor ray: Ray is not installed; install the extra with `pip install 'r2s2r[ray]'`"
            ) from None
        return RayExecutor(spec, workers, address)
    from r2s2r.errors import UnknownNameError

    raise UnknownNameError("executor", executor, EXECUTORS)
