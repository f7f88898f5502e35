"""bench.geodata.common: what the geodata benchmarks share: figures, throwaway PostGIS
databases, a ``cartotheca serve`` process, a keep-alive HTTP client and PNG coverage."""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio or mapnik load)

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
PG_HOST, PG_PORT, PG_USER = "127.0.0.1", 5432, "postgres"
ADMIN_USER, ADMIN_PASSWORD = "admin", "bench-admin-pass"

# The WMS views: square, centred on 20E 45N (the middle of the generated data); the whole
# extent, then 1/64 and 1/4096 of its area (geodata-notes.md §5b).
CENTRE, SIDE = (20.0, 45.0), 40.0
VIEWS = {"whole": 1, "1/64": 8, "1/4096": 64}


def view_bbox(divisor: int) -> tuple[float, float, float, float]:
    half = SIDE / divisor / 2
    return CENTRE[0] - half, CENTRE[1] - half, CENTRE[0] + half, CENTRE[1] + half


def figures(times: list[float]) -> dict[str, float]:
    return {"n": len(times), "min": min(times), "median": statistics.median(times), "max": max(times)}


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def log(*parts: object) -> None:
    print(*parts, file=sys.stderr, flush=True)


# -- PostgreSQL -----------------------------------------------------------------------------


def psql(sql: str, dbname: str = "postgres") -> str:
    done = subprocess.run(["psql", "-h", PG_HOST, "-p", str(PG_PORT), "-U", PG_USER, "-d", dbname,
                           "-v", "ON_ERROR_STOP=1", "-qAt"], input=sql, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"psql failed: {sql}\n{done.stderr}")
    return done.stdout


@contextmanager
def throwaway_database(prefix: str, postgis: bool = True, keep: bool = False) -> Iterator[str]:
    """A new database (with the postgis extension); dropped afterwards unless ``keep``."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    psql(f'CREATE DATABASE "{name}"')
    try:
        if postgis:
            psql("CREATE EXTENSION postgis", name)
        yield name
    finally:
        if not keep:
            psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def sqlalchemy_url(dbname: str) -> str:
    return f"postgresql+psycopg://{PG_USER}@{PG_HOST}:{PG_PORT}/{dbname}"


def libpq_conninfo(dbname: str) -> str:
    return f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname={dbname}"


# -- the Cartotheca server ------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(data_dir: Path, database_url: str, storage: str, datastore_url: str | None,
               port: int) -> dict[str, str]:
    env = dict(os.environ,
               CARTOTHECA_DATA_DIR=str(data_dir),
               CARTOTHECA_DATABASE_URL=database_url,
               CARTOTHECA_STORAGE_BACKEND=storage,
               CARTOTHECA_ADMIN_USER=ADMIN_USER,
               CARTOTHECA_ADMIN_PASSWORD=ADMIN_PASSWORD,
               CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
               # No access log and no request capture: one log line or metric row per request
               # would be measured as well (monitoring overhead has its own target).
               CARTOTHECA_LOG_LEVEL="warning",
               CARTOTHECA_MONITORING_ENABLED="false")
    if datastore_url:
        env["CARTOTHECA_DATASTORE_URL"] = datastore_url
    return env


class Server:
    """``cartotheca serve`` (uvicorn, one worker) on a free loopback port."""

    def __init__(self, env: dict[str, str], port: int, log_path: Path | None = None):
        self.env, self.port, self.log_path = env, port, log_path
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        cmd = [sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
               "--port", str(self.port), "--workers", "1"]
        out = open(self.log_path, "ab") if self.log_path else None  # noqa: SIM115 (lives with the process)
        self.proc = subprocess.Popen(cmd, env=self.env, cwd=ROOT, stdout=out, stderr=out)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"server exited with {self.proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/api/v2/", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2)
        self.__exit__()
        raise SystemExit("server did not become ready within 120 s")

    def __exit__(self, *exc) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def memory_mib(self) -> dict[str, float]:
        out = {}
        assert self.proc is not None
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
        return out


class HTTPClient:
    """One keep-alive connection (stdlib: the client should cost as little CPU as possible)."""

    def __init__(self, port: int):
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

    def get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        try:
            return self._get(path)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.conn.close()  # uvicorn drops idle keep-alive connections after 5 s
            return self._get(path)

    def _get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        self.conn.request("GET", path)
        response = self.conn.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body

    def close(self) -> None:
        self.conn.close()


# -- images ---------------------------------------------------------------------------------


def png_coverage(data: bytes) -> dict[str, float]:
    """How much two renderers drew, to check their images are comparable: ``drawn`` is the
    share of pixels visibly off the white background; ``ink`` the mean darkness (0 white, 1
    black), which weighs anti-aliased edges by their strength, so renderers that smooth
    sub-pixel shapes differently still compare."""
    import warnings

    import numpy as np
    from rasterio.errors import NotGeoreferencedWarning
    from rasterio.io import MemoryFile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with MemoryFile(data) as mem, mem.open() as src:
            arr = src.read()
            if src.count == 1 and src.colorinterp[0].name == "palette":
                cmap = src.colormap(1)
                lut = np.array([cmap.get(i, (0, 0, 0, 0)) for i in range(256)], dtype=np.uint8)
                arr = np.moveaxis(lut[arr[0]], -1, 0)
    if arr.shape[0] in (1, 2):  # grey (+ alpha)
        arr = np.concatenate([np.repeat(arr[:1], 3, axis=0), arr[1:]])
    rgb = arr[:3].astype(int)
    alpha = arr[3] if arr.shape[0] == 4 else np.full(rgb.shape[1:], 255)
    drawn = (alpha > 16) & (np.abs(rgb - 255).max(axis=0) > 24)
    luminance = (0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2]) * (alpha / 255) + 255 * (1 - alpha / 255)
    return {"drawn": float(drawn.mean()), "ink": float(1 - luminance.mean() / 255),
            "bands": int(arr.shape[0])}


def write_json(path: Path, results: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=str))
