"""cartotheca.tasks.backends.inprocess: worker threads inside the server (the embedded default)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from cartotheca.tasks.engine import Engine

log = logging.getLogger("cartotheca.tasks")


class InProcessBackend:
    """Runs executions on a thread pool; a poller picks up rows left ready or stale.

    Several server processes may each run one: claiming is atomic in the database, so an
    execution runs once whichever process sees it first.
    """

    def __init__(self, engine: Engine, poll_seconds: float = 1.0):
        self.engine = engine
        self.poll_seconds = poll_seconds
        self.pool = ThreadPoolExecutor(max_workers=max(1, engine.settings.EXECUTION_WORKERS),
                                       thread_name_prefix="execution")
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="execution-poller", daemon=True)
        self._poller.start()

    def enqueue(self, exec_id: str) -> None:
        self.pool.submit(self._run, exec_id)

    def _run(self, exec_id: str) -> None:
        try:
            self.engine.run(exec_id)
        except Exception:
            log.exception("execution %s could not be run", exec_id)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self.engine.recover()
                for exec_id in self.engine.ready_ids():
                    self.enqueue(exec_id)
            except Exception:
                log.warning("execution poll failed", exc_info=True)
            self._stop.wait(self.poll_seconds)

    def shutdown(self) -> None:
        self._stop.set()
        self._poller.join(timeout=5)
        self.pool.shutdown(wait=True, cancel_futures=False)
