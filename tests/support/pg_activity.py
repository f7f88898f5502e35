"""Watching a server process's PostgreSQL connections from outside, as an operator would.

``ActivityWatch`` samples ``pg_stat_activity`` in a thread, keeping per sample the number of
connections each server process (and its uvicorn workers) holds to the catalogue database, and
the longest time any of them had been "idle in transaction".
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import psutil
from sqlalchemy import create_engine, text

from tests.support.services import PG_ADMIN_URL


@dataclass
class ActivityWatch:
    root_pid: int  # the server process; its children (uvicorn workers) are watched too
    database: str
    interval: float = 0.05
    connections: list[dict[int, int]] = field(default_factory=list)  # per sample: pid → count
    idle_in_transaction: list[tuple[float, str]] = field(default_factory=list)  # seconds, last query

    def __post_init__(self) -> None:
        self._engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT", pool_size=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ActivityWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(10)
        self._engine.dispose()

    def most_per_process(self) -> int:
        return max((n for sample in self.connections for n in sample.values()), default=0)

    def longest_idle_in_transaction(self) -> tuple[float, str]:
        return max(self.idle_in_transaction, default=(0.0, ""))

    def _ports(self) -> dict[int, int]:
        """Local port of each of the server processes' connections to PostgreSQL → its pid."""
        root = psutil.Process(self.root_pid)
        ports = {}
        for proc in [root, *root.children(recursive=True)]:
            try:
                ports.update({c.laddr.port: proc.pid for c in proc.net_connections("tcp")
                              if c.raddr and c.raddr.port == 5432})
            except psutil.Error:
                continue
        return ports

    def _run(self) -> None:
        with self._engine.connect() as conn:
            while not self._stop.wait(self.interval):
                rows = conn.execute(text(
                    "SELECT client_port, state, extract(epoch FROM now() - state_change), query "
                    "FROM pg_stat_activity WHERE datname = :name"), {"name": self.database}).all()
                ports = self._ports()
                sample: dict[int, int] = {}
                for port, state, seconds, query in rows:
                    pid = ports.get(port)
                    if pid is None:
                        continue
                    sample[pid] = sample.get(pid, 0) + 1
                    if state == "idle in transaction":
                        self.idle_in_transaction.append((float(seconds), query))
                self.connections.append(sample)
