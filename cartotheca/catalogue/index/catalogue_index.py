"""cartotheca.catalogue.index.catalogue_index: one process's bitmap index, kept exact by the feed.

``fresh()`` is called before every count: one statement polls the change table, the changed
resources' facts are re-read and re-applied, and the bitmaps are handed out under the lock.
It answers None (the caller counts in SQL, as without an index) while the index is not built
yet, while more than ``CATALOGUE_INDEX_MAX_PENDING`` changes wait (a bulk import: a rebuild
starts in the background instead), or when the feed was trimmed past its watermark.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sqlalchemy import Connection, Engine

from cartotheca.catalogue.index import snapshot
from cartotheca.catalogue.index.bitmaps import Bitmaps
from cartotheca.catalogue.index.build import build
from cartotheca.catalogue.index.facts import read_facts
from cartotheca.catalogue.index.feed import Feed
from cartotheca.catalogue.index.trim import trim
from cartotheca.settings import Settings

log = logging.getLogger("cartotheca.index")


class CatalogueIndex:
    """The visibility and facet index of one server process."""

    def __init__(self, engine: Engine, settings: Settings,
                 load: Callable[[Engine], tuple[Bitmaps, int]] = build,
                 on_built: Callable[[int, float], None] | None = None):
        self.engine, self.settings, self.load, self.on_built = engine, settings, load, on_built
        self.bitmaps: Bitmaps | None = None
        self.feed = Feed()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wanted = threading.Event()  # a (re)build is asked for
        self._thread: threading.Thread | None = None
        self.builds = 0

    # -- life ------------------------------------------------------------------------------

    def start(self) -> None:
        """Build in a background thread (requests count in SQL meanwhile), then keep trimming."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stop.clear()
        if self.bitmaps is None:
            self._wanted.set()
        self._thread = threading.Thread(target=self._run, name="catalogue-index", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._wanted.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self._thread = None
        self._wanted.clear()  # set only to wake the thread; a later start builds if need be
        # Its pooled connections go with the served app; a later start opens new ones.
        self.engine.dispose()

    def _run(self) -> None:
        interval = self.settings.CATALOGUE_INDEX_SNAPSHOT_INTERVAL
        if self.bitmaps is None and interval > 0 and self.load_snapshot():
            self._wanted.clear()
        next_trim = time.monotonic() + self.settings.CATALOGUE_INDEX_TRIM_INTERVAL
        next_snapshot = time.monotonic() + interval
        while not self._stop.is_set():
            if self._wanted.wait(timeout=1.0) and not self._stop.is_set():
                self._wanted.clear()
                self.rebuild()
            now = time.monotonic()
            if now >= next_trim and not self._stop.is_set():
                next_trim = now + self.settings.CATALOGUE_INDEX_TRIM_INTERVAL
                self._quietly(lambda: trim(self.engine, self.settings.CATALOGUE_INDEX_RETENTION),
                              "trimming the resource change feed failed")
            if interval > 0 and now >= next_snapshot and not self._stop.is_set():
                next_snapshot = now + interval
                self._quietly(self.write_snapshot, "writing the catalogue index snapshot failed")

    @staticmethod
    def _quietly(action: Callable[[], object], failure: str) -> None:
        try:
            action()
        except Exception:
            log.exception(failure)

    def load_snapshot(self) -> bool:
        """Start from the stored snapshot (the polls replay what came after it)."""
        started = time.monotonic()
        try:
            stored = snapshot.load(self.engine)
        except Exception:
            log.exception("loading the catalogue index snapshot failed")
            return False
        if stored is None:
            return False
        bitmaps, watermark = stored
        with self._lock:
            self.bitmaps = bitmaps
            self.feed.start_at(watermark)
        if self.on_built is not None:
            self.on_built(len(bitmaps.all), time.monotonic() - started)
        return True

    def write_snapshot(self) -> bool:
        """Store this process's bitmaps and watermark, unless another process just did."""
        with self._lock:
            if self.bitmaps is None:
                return False
            data, watermark = snapshot.dumps(self.bitmaps), self.feed.watermark
        return snapshot.write(self.engine, data, watermark,
                              self.settings.CATALOGUE_INDEX_SNAPSHOT_INTERVAL)

    def rebuild(self) -> bool:
        """Build from the database (streamed), then swap it in."""
        started = time.monotonic()
        try:
            bitmaps, watermark = self.load(self.engine)
        except Exception:
            log.exception("building the catalogue index failed")
            return False
        with self._lock:
            self.bitmaps = bitmaps
            self.feed.start_at(watermark)
            self.builds += 1
        if self.on_built is not None:
            self.on_built(len(bitmaps.all), time.monotonic() - started)
        return True

    def wait_ready(self, timeout: float = 30.0) -> bool:
        deadline = time.monotonic() + timeout
        while self.bitmaps is None and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.bitmaps is not None

    @property
    def ready(self) -> bool:
        return self.bitmaps is not None

    # -- reading ---------------------------------------------------------------------------

    @contextmanager
    def fresh(self, conn: Connection) -> Iterator[Bitmaps | None]:
        """The bitmaps as of now (held under the lock while the caller counts), or None.

        The poll is made on ``conn``, the request's own connection: it stands in for the
        COUNT the request would otherwise make, and takes no second connection from the pool.
        Changed resources are re-read on the index's own connection.
        """
        with self._lock:
            yield self._catch_up(conn)

    def _catch_up(self, conn: Connection) -> Bitmaps | None:
        if self.bitmaps is None:
            return None
        limit = self.settings.CATALOGUE_INDEX_MAX_PENDING
        poll = self.feed.poll(conn, limit)
        if poll.trimmed_past or len(poll.entries) > limit:
            # Far behind (or changes lost): SQL answers until the rebuild is swapped in.
            if poll.trimmed_past:
                self.bitmaps = None
            self._wanted.set()
            return None
        changed = poll.resource_ids
        if changed:
            with self.engine.connect() as own:
                facts = read_facts(own, changed)
                own.rollback()
            for rid in changed:
                self.bitmaps.set_resource(rid, facts.get(rid))
        self.feed.advance(poll)
        return self.bitmaps
