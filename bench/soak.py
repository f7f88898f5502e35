"""bench.soak: many keep-alive clients against ``cartotheca serve`` for a bounded time, with
hostile extras (slow readers, a wrong-password flood), watching the server's memory, file
descriptors and database connections.

    python bench/soak.py --clients 50 --seconds 60                       # SQLite under bench/data/soak
    python bench/soak.py --database-url postgresql://postgres@127.0.0.1:5432/cartotheca_soak \\
        --workers 2 --clients 200 --seconds 600 --slow-readers 10 --wrong-password-flood 5

Unless ``--url`` names a running server, the script loads ``--resources`` synthetic resources
with ``bench/load.py``, starts ``cartotheca serve --workers N`` on a free loopback port, uploads a
point layer, a raster and a few documents through the API, then drives the mix below. Every loop is
bounded by ``--seconds`` and ``--max-requests``; everything stays on the loopback interface.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import http.client
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import psutil
import pyarrow as pa
import rasterio
import shapely
from pyogrio.raw import write_arrow
from rasterio.transform import from_bounds
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).parent))
import load  # noqa: E402  (bench/ is a folder of scripts, not a package)

ROOT = Path(__file__).resolve().parent.parent
ADMIN = (load.ADMIN_USER, load.ADMIN_PASSWORD)
USER = (load.REGULAR_USER, load.USER_PASSWORD)
POINTS = 20_000  # enough GML that a slow reader's answer fills the socket buffers
EXTENT = (0.0, 40.0, 20.0, 60.0)

# The request mix: kind → weight. Reads dominate, as on a public catalogue.
MIX = {
    "list_anonymous": 14, "list_user": 8, "detail": 12, "search": 8, "wms_getmap": 14,
    "tile": 14, "wfs_getfeature": 8, "csw_getrecords": 6, "patch_resource": 4, "favorite": 4,
    "permissions": 2, "document_upload": 1,
}
# What the acceptance calls "reads" (p99 under 2 s): the catalogue API's lists, searches and
# details. Maps, tiles, features and records are the map server's heavier work.
READS = ("list_anonymous", "list_user", "detail", "search")


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))] if ordered else 0.0


# -- seed data -------------------------------------------------------------------------------

def write_points(path: Path, n: int = POINTS) -> Path:
    rng = np.random.default_rng(7)
    x, y = rng.uniform(EXTENT[0], EXTENT[2], n), rng.uniform(EXTENT[1], EXTENT[3], n)
    table = pa.table({"name": pa.array([f"pt-{i}" for i in range(n)]),
                      "value": pa.array(rng.normal(100.0, 25.0, n)),
                      "geometry": pa.array(shapely.to_wkb(shapely.points(x, y)), pa.binary())})
    path.unlink(missing_ok=True)
    write_arrow(table, str(path), layer=path.stem, driver="GPKG", geometry_name="geometry",
                geometry_type="Point", crs="EPSG:4326")
    return path


def write_raster(path: Path, size: int = 512) -> Path:
    rng = np.random.default_rng(8)
    with rasterio.open(path, "w", driver="GTiff", width=size, height=size, count=3, dtype="uint8",
                       crs="EPSG:4326", transform=from_bounds(*EXTENT, size, size), tiled=True,
                       blockxsize=256, blockysize=256, compress="deflate") as dst:
        dst.write(rng.integers(0, 255, (3, size, size), dtype=np.uint8))
    return path


def wait_execution(client: httpx.Client, exec_id: str, timeout: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        record = client.get(f"/api/v2/executionrequest/{exec_id}").json()["request"]
        if record["status"] in ("finished", "failed"):
            if record["status"] == "failed":
                raise SystemExit(f"execution {exec_id} failed: {record.get('log')}")
            return record
        time.sleep(0.2)
    raise SystemExit(f"execution {exec_id} not finished after {timeout}s")


def upload_dataset(client: httpx.Client, path: Path, title: str) -> dict:
    with path.open("rb") as handle:
        response = client.post("/api/v2/uploads/upload", data={"charset": "UTF-8", "title": title},
                               files={"base_file": (path.name, handle, "application/octet-stream")})
    response.raise_for_status()
    wait_execution(client, response.json()["execution_id"])
    found = client.get("/api/v2/datasets", params={"filter{title}": title}).json()["datasets"]
    if not found:
        raise SystemExit(f"uploaded {path.name} but no dataset titled {title!r}")
    return found[0]


def seed_over_http(base: str, work: Path, *, raster: bool = True) -> dict:
    """The point layer, the raster (``raster``; else tiles are drawn from the points) and three
    documents, as admin through the API."""
    work.mkdir(parents=True, exist_ok=True)
    suffix = uuid.uuid4().hex[:6]
    with httpx.Client(base_url=base, headers=basic(*ADMIN), timeout=300) as client:
        points = upload_dataset(client, write_points(work / "soak_points.gpkg"), f"Soak points {suffix}")
        tiled = upload_dataset(client, write_raster(work / "soak_raster.tif"), f"Soak raster {suffix}") \
            if raster else points
        for i in range(3):
            client.post("/api/v2/documents", data={"title": f"Soak document {suffix} {i}"},
                        files={"doc_file": (f"notes{i}.txt", b"soak test document\n" * 50,
                                            "text/plain")}).raise_for_status()
        # Public resources, so the regular user's favourites and the anonymous reads find them.
        public = httpx.get(f"{base}/api/v2/resources", params={"page_size": 200}, timeout=60)
        ids = [r["pk"] for r in public.json()["resources"]]
    return {"points": points["alternate"], "raster": tiled["alternate"],
            "points_id": int(points["pk"]), "resource_ids": [int(i) for i in ids]}


# -- the server ------------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(args, port: int, log_path: Path) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARTOTHECA_")}
    env.update(CARTOTHECA_DATA_DIR=str(args.data_dir), CARTOTHECA_DATABASE_URL=args.database_url,
               CARTOTHECA_ADMIN_USER=ADMIN[0], CARTOTHECA_ADMIN_PASSWORD=ADMIN[1],
               CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/", CARTOTHECA_LOG_LEVEL="warning")
    env.update({f"CARTOTHECA_{name}": value for name, value in args.setting})
    cmd = [sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--workers", str(args.workers)]
    with log_path.open("ab") as out:
        proc = subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}; see {log_path}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/api/v2/", timeout=2).status_code == 200:
                return proc
        time.sleep(0.3)
    proc.terminate()
    raise SystemExit(f"server not up after 120 s; see {log_path}")


def stop_server(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def server_processes(root_pid: int | None, port: int) -> list[psutil.Process]:
    """The uvicorn processes serving ``port``: the started process and its workers, or, for
    ``--url``, whichever processes listen on the port."""
    if root_pid is not None:
        root = psutil.Process(root_pid)
        return [root, *root.children(recursive=True)]
    found = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if any(c.laddr and c.laddr.port == port and c.status == psutil.CONN_LISTEN
                   for c in proc.net_connections("tcp")):
                found.append(proc)
    return found


# -- what the server holds -----------------------------------------------------------------

@dataclass
class Sample:
    at: float
    rss_mib: float
    fds: int
    db_connections: dict[int, int]  # server pid → connections to the catalogue database
    idle_in_transaction_max_s: float = 0.0


class Sampler(threading.Thread):
    """Every ``interval`` seconds: resident memory and open descriptors of the server processes,
    and their database connections (pg_stat_activity on PostgreSQL, open files on SQLite)."""

    def __init__(self, procs: Callable[[], list[psutil.Process]], database_url: str | None,
                 interval: float, stop: threading.Event):
        super().__init__(daemon=True)
        self.procs, self.interval, self.stop = procs, interval, stop
        self.samples: list[Sample] = []
        self.t0 = time.monotonic()
        self.pg = (create_engine(database_url, pool_size=1)
                   if database_url and database_url.startswith("postgresql") else None)
        self.sqlite_path = (str(Path(database_url.split("///", 1)[1]).resolve())
                            if database_url and database_url.startswith("sqlite") else None)

    def run(self) -> None:
        while not self.stop.is_set():
            with contextlib.suppress(Exception):
                self.samples.append(self.sample())
            self.stop.wait(self.interval)
        if self.pg is not None:
            self.pg.dispose()

    def sample(self) -> Sample:
        procs = self.procs()
        rss, fds, ports = 0, 0, {}
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                rss += proc.memory_info().rss
                fds += proc.num_fds()
                ports.update({c.laddr.port: proc.pid for c in proc.net_connections("tcp") if c.raddr})
        sample = Sample(time.monotonic() - self.t0, rss / 2**20, fds, {})
        if self.pg is not None:
            self._pg_connections(sample, ports)
        elif self.sqlite_path:
            for proc in procs:
                with contextlib.suppress(psutil.Error):
                    sample.db_connections[proc.pid] = sum(
                        f.path.startswith(self.sqlite_path) for f in proc.open_files())
        return sample

    def _pg_connections(self, sample: Sample, ports: dict[int, int]) -> None:
        with self.pg.connect() as conn:
            rows = conn.execute(text(
                "SELECT client_port, state, extract(epoch FROM now() - state_change) "
                "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )).all()
        for port, state, seconds in rows:
            pid = ports.get(port)
            if pid is None:
                continue
            sample.db_connections[pid] = sample.db_connections.get(pid, 0) + 1
            if state == "idle in transaction":
                sample.idle_in_transaction_max_s = max(sample.idle_in_transaction_max_s, float(seconds))


# -- the clients -----------------------------------------------------------------------------

@dataclass
class Tally:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    statuses: dict[str, dict[int, int]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(int)))
    resets: int = 0
    timeouts: int = 0
    other_errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    stale_keepalive: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, kind: str, status: int, seconds: float) -> None:
        with self.lock:
            self.times[kind].append(seconds)
            self.statuses[kind][status] += 1


class Budget:
    """The shared bound: a deadline and a total number of requests."""

    def __init__(self, seconds: float, max_requests: int):
        self.deadline = time.monotonic() + seconds
        self.left = max_requests
        self.lock = threading.Lock()

    def take(self) -> bool:
        with self.lock:
            if self.left <= 0 or time.monotonic() >= self.deadline:
                return False
            self.left -= 1
            return True


def multipart(fields: dict[str, str], files: dict[str, tuple[str, bytes, str]]) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'
                     f"{value}\r\n".encode())
    for name, (filename, data, content_type) in files.items():
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
                f'filename="{filename}"\r\nContent-Type: {content_type}\r\n\r\n')
        parts.append(head.encode() + data + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


class Client:
    """One keep-alive connection doing the mix until the budget runs out."""

    def __init__(self, host: str, port: int, seed: dict, tally: Tally, budget: Budget, n: int):
        self.host, self.port, self.seed, self.tally, self.budget = host, port, seed, tally, budget
        self.rng = random.Random(n)
        self.conn = http.client.HTTPConnection(host, port, timeout=60)
        self.user, self.admin = basic(*USER), basic(*ADMIN)

    def run(self) -> None:
        kinds, weights = list(MIX), list(MIX.values())
        while self.budget.take():
            kind = self.rng.choices(kinds, weights)[0]
            method, path, headers, body = getattr(self, kind)()
            self.send(kind, method, path, headers, body)
        self.conn.close()

    def send(self, kind: str, method: str, path: str, headers: dict, body: bytes | None) -> None:
        t0 = time.perf_counter()
        for attempt in (1, 2):
            fresh = self.conn.sock is None
            try:
                self.conn.request(method, path, body=body, headers=headers)
                response = self.conn.getresponse()
                response.read()
                self.tally.record(kind, response.status, time.perf_counter() - t0)
                if response.getheader("connection", "").lower() == "close":
                    self.conn.close()
                return
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError) as exc:
                self.conn.close()
                if attempt == 1 and not fresh and isinstance(exc, http.client.RemoteDisconnected):
                    # The server closed an idle keep-alive connection as we reused it: retry once.
                    with self.tally.lock:
                        self.tally.stale_keepalive += 1
                    continue
                with self.tally.lock:
                    self.tally.resets += 1
                return
            except TimeoutError:
                self.conn.close()
                with self.tally.lock:
                    self.tally.timeouts += 1
                return
            except (OSError, http.client.HTTPException) as exc:
                self.conn.close()
                with self.tally.lock:
                    self.tally.other_errors[type(exc).__name__] += 1
                return

    # One method per kind: (method, path, headers, body).
    def _id(self) -> int:
        return self.rng.choice(self.seed["resource_ids"])

    def list_anonymous(self):
        return "GET", f"/api/v2/resources?page={self.rng.randint(1, 20)}", {}, None

    def list_user(self):
        return "GET", "/api/v2/resources?page_size=20", self.user, None

    def detail(self):
        return "GET", f"/api/v2/resources/{self._id()}", self.admin, None

    def search(self):
        return "GET", f"/api/v2/resources?search={self.rng.choice(load.WORDS)}&search_fields=title", {}, None

    def wms_getmap(self):
        x, y = self.rng.uniform(0, 15), self.rng.uniform(40, 55)
        query = urllib.parse.urlencode({
            "SERVICE": "WMS", "VERSION": "1.1.1", "REQUEST": "GetMap", "LAYERS": self.seed["points"],
            "STYLES": "", "SRS": "EPSG:4326", "BBOX": f"{x},{y},{x + 5},{y + 5}", "WIDTH": 256,
            "HEIGHT": 256, "FORMAT": "image/png"})
        return "GET", f"/ows?{query}", {}, None

    def tile(self):
        z = self.rng.randint(3, 7)
        n = 2 ** z  # tiles over lon 0..20, lat 40..60 in WebMercatorQuad
        x = self.rng.randint(int(n * 180 / 360), int(n * 200 / 360))
        y = self.rng.randint(int(n * 0.30), int(n * 0.36))
        return "GET", f"/tiles/{self.seed['raster']}/{z}/{x}/{y}.png", {}, None

    def wfs_getfeature(self):
        x, y = self.rng.uniform(0, 18), self.rng.uniform(40, 58)
        query = urllib.parse.urlencode({
            "SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetFeature", "TYPENAMES": self.seed["points"],
            "COUNT": 50, "BBOX": f"{y},{x},{y + 2},{x + 2},urn:ogc:def:crs:EPSG::4326"})
        return "GET", f"/ows?{query}", {}, None

    def csw_getrecords(self):
        query = urllib.parse.urlencode({
            "service": "CSW", "version": "2.0.2", "request": "GetRecords", "typenames": "csw:Record",
            "resulttype": "results", "elementsetname": "brief", "maxRecords": 10,
            "startPosition": self.rng.randint(1, 200)})
        return "GET", f"/catalogue/csw?{query}", {}, None

    def patch_resource(self):
        body = json.dumps({"abstract": f"soak {self.rng.random()}"}).encode()
        headers = {**self.admin, "Content-Type": "application/json"}
        return "PATCH", f"/api/v2/resources/{self._id()}", headers, body

    def favorite(self):
        method = self.rng.choice(("POST", "DELETE"))
        return method, f"/api/v2/resources/{self._id()}/favorite", self.user, None

    def permissions(self):
        # Re-grant what the resource already has: a real asynchronous permissions execution.
        body = json.dumps({"groups": [], "users": []}).encode()
        return "PATCH", f"/api/v2/resources/{self._id()}/permissions", \
            {**self.admin, "Content-Type": "application/json"}, body

    def document_upload(self):
        body, content_type = multipart({"title": f"Soak upload {uuid.uuid4().hex[:8]}"},
                                       {"doc_file": ("soak.txt", b"soak upload\n" * 100, "text/plain")})
        return "POST", "/api/v2/documents", {**self.admin, "Content-Type": content_type}, body


def slow_reader(host: str, port: int, seed: dict, budget: Budget, tally: Tally) -> None:
    """Ask for the whole point layer and read 1 KiB of it, then hold the connection until the end."""
    query = urllib.parse.urlencode({"SERVICE": "WFS", "VERSION": "2.0.0", "REQUEST": "GetFeature",
                                    "TYPENAMES": seed["points"]})
    with contextlib.suppress(OSError):
        sock = socket.create_connection((host, port), timeout=60)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(f"GET /ows?{query} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        head = sock.recv(1024)
        tally.record("slow_reader", int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/") else 0, 0.0)
        while time.monotonic() < budget.deadline:
            time.sleep(0.5)
        sock.close()


def wrong_password(host: str, port: int, budget: Budget, tally: Tally) -> None:
    """Concurrent Basic authentication with a wrong password for a made-up account, as fast as
    the server answers. It comes from an address of its own (127.0.0.9 when the server is on
    127.0.0.1): the login throttle locks out the flooding address, and the other clients must
    not be locked out with it."""
    source = ("127.0.0.9", 0) if host == "127.0.0.1" else None
    conn = http.client.HTTPConnection(host, port, timeout=60, source_address=source)
    headers = basic("soak-flood-nobody", "not-the-password")
    while time.monotonic() < budget.deadline:
        t0 = time.perf_counter()
        try:
            conn.request("GET", "/api/v2/resources?page_size=1", headers=headers)
            response = conn.getresponse()
            response.read()
            tally.record("wrong_password", response.status, time.perf_counter() - t0)
        except (OSError, http.client.HTTPException):
            conn.close()
            with tally.lock:
                tally.other_errors["wrong_password"] += 1
    conn.close()


# -- the run ---------------------------------------------------------------------------------

def drive(args, host: str, port: int, seed: dict, sampler: Sampler) -> dict:
    tally, budget = Tally(), Budget(args.seconds, args.max_requests)
    threads = [threading.Thread(target=Client(host, port, seed, tally, budget, i).run, daemon=True)
               for i in range(args.clients)]
    threads += [threading.Thread(target=slow_reader, args=(host, port, seed, budget, tally), daemon=True)
                for _ in range(args.slow_readers)]
    threads += [threading.Thread(target=wrong_password, args=(host, port, budget, tally), daemon=True)
                for _ in range(args.wrong_password_flood)]
    t0 = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=max(1.0, budget.deadline - time.monotonic()) + 90)
    elapsed = time.monotonic() - t0
    return summarise(tally, elapsed, sampler.samples)


def summarise(tally: Tally, elapsed: float, samples: list[Sample]) -> dict:
    kinds = {}
    for kind, times in sorted(tally.times.items()):
        statuses = dict(tally.statuses[kind])
        kinds[kind] = {"requests": len(times), "p50_ms": percentile(times, 0.50) * 1000,
                       "p95_ms": percentile(times, 0.95) * 1000, "p99_ms": percentile(times, 0.99) * 1000,
                       "statuses": {str(k): v for k, v in sorted(statuses.items())}}
    mix_requests = sum(v["requests"] for k, v in kinds.items() if k in MIX)
    reads = [t for kind in READS for t in tally.times.get(kind, [])]
    five_xx = sum(n for k in kinds.values() for s, n in k["statuses"].items() if s.startswith("5"))
    at_minute = next((s for s in samples if s.at >= min(60.0, elapsed / 2)), samples[0] if samples else None)
    end = samples[-1] if samples else None
    growth = ((end.rss_mib - at_minute.rss_mib) / at_minute.rss_mib * 100) if at_minute and end else None
    max_db: dict[str, int] = {}
    for sample in samples:
        for pid, count in sample.db_connections.items():
            max_db[str(pid)] = max(max_db.get(str(pid), 0), count)
    return {
        "seconds": elapsed, "requests": mix_requests, "requests_per_s": mix_requests / elapsed,
        "kinds": kinds, "5xx": five_xx,
        "reads": {"requests": len(reads), "p50_ms": percentile(reads, 0.50) * 1000,
                  "p99_ms": percentile(reads, 0.99) * 1000},
        "connection_resets": tally.resets, "timeouts": tally.timeouts,
        "other_errors": dict(tally.other_errors), "stale_keepalive_retries": tally.stale_keepalive,
        "memory_mib": {"first": samples[0].rss_mib if samples else None,
                       "at_1_min": at_minute.rss_mib if at_minute else None,
                       "at_1_min_taken_at_s": at_minute.at if at_minute else None,
                       "end": end.rss_mib if end else None, "growth_pct": growth},
        "open_fds": {"max": max((s.fds for s in samples), default=None), "end": end.fds if end else None},
        "db_connections_max_per_process": max_db,
        "idle_in_transaction_max_s": max((s.idle_in_transaction_max_s for s in samples), default=0.0),
    }


def report(results: dict) -> str:
    lines = [f"{results['requests']:,} requests in {results['seconds']:.0f} s = "
             f"{results['requests_per_s']:.1f}/s; 5xx {results['5xx']}, resets "
             f"{results['connection_resets']}, timeouts {results['timeouts']}, other errors "
             f"{results['other_errors'] or 0}, stale keep-alive retries {results['stale_keepalive_retries']}",
             f"reads ({', '.join(READS)}): {results['reads']['requests']:,}, p50 "
             f"{results['reads']['p50_ms']:.0f} ms, p99 {results['reads']['p99_ms']:.0f} ms",
             "", "| kind | requests | p50 ms | p95 ms | p99 ms | statuses |", "|---|---:|---:|---:|---:|---|"]
    for kind, k in results["kinds"].items():
        lines.append(f"| {kind} | {k['requests']} | {k['p50_ms']:.0f} | {k['p95_ms']:.0f} | "
                     f"{k['p99_ms']:.0f} | {k['statuses']} |")
    memory = results["memory_mib"]
    if memory["end"] is not None:
        lines += ["", f"server RSS: {memory['at_1_min']:.0f} MiB at {memory['at_1_min_taken_at_s']:.0f} s, "
                  f"{memory['end']:.0f} MiB at the end ({memory['growth_pct']:+.1f}%); open fds max "
                  f"{results['open_fds']['max']}, end {results['open_fds']['end']}"]
    sqlite = results["setup"]["database"] == "sqlite"
    what = "open database files (SQLite)" if sqlite else "database connections"
    lines.append(f"{what}, max per server process: {results['db_connections_max_per_process']}; "
                 f"longest idle in transaction: {results['idle_in_transaction_max_s']:.1f} s")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server (http://127.0.0.1:PORT/) instead of starting one")
    parser.add_argument("--database-url", help="catalogue database (default: SQLite under --data-dir)")
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data/soak"))
    parser.add_argument("--resources", type=int, default=10_000, help="synthetic resources to load first")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=1_000_000)
    parser.add_argument("--slow-readers", type=int, default=0)
    parser.add_argument("--wrong-password-flood", type=int, default=0)
    parser.add_argument("--sample-every", type=float, default=2.0, help="seconds between server samples")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    parser.add_argument("--vector-only", action="store_true",
                        help="no raster: tiles are drawn from the point layer (a cluster without an "
                             "object store keeps rasters on the worker's disk only)")
    parser.add_argument("--setting", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        metavar="NAME=VALUE", help="a server setting (CARTOTHECA_NAME), repeatable")
    args = parser.parse_args(argv)
    args.data_dir = args.data_dir.resolve()
    args.data_dir.mkdir(parents=True, exist_ok=True)
    if args.database_url is None and args.url is None:
        args.database_url = f"sqlite:///{args.data_dir / 'soak.sqlite3'}"

    proc = None
    try:
        if args.url:
            parsed = urllib.parse.urlsplit(args.url)
            host, port = parsed.hostname or "127.0.0.1", parsed.port or 80
            if host not in ("127.0.0.1", "localhost", "::1"):
                raise SystemExit("--url must be a loopback address: this script floods what it targets")
            if args.database_url and args.resources:
                load.load(args.database_url, args.resources, args.data_dir)
        else:
            if args.resources:
                load.load(args.database_url, args.resources, args.data_dir)
            host, port = "127.0.0.1", free_port()
            proc = start_server(args, port, args.data_dir / "server.log")
        base = f"http://{host}:{port}"
        print(f"server {base}; seeding datasets and documents", file=sys.stderr, flush=True)
        seed = seed_over_http(base, args.data_dir / "files", raster=not args.vector_only)
        stop = threading.Event()
        root_pid = proc.pid if proc else None
        sampler = Sampler(lambda: server_processes(root_pid, port), args.database_url,
                          args.sample_every, stop)
        sampler.start()
        print(f"driving {args.clients} clients for {args.seconds:.0f} s", file=sys.stderr, flush=True)
        results = drive(args, host, port, seed, sampler)
        stop.set()
        sampler.join(10)
        results["setup"] = {"clients": args.clients, "workers": args.workers if proc else None,
                            "slow_readers": args.slow_readers,
                            "wrong_password_flood": args.wrong_password_flood,
                            "vector_only": args.vector_only,
                            "settings": dict(args.setting),
                            "database": (args.database_url or "").split(":", 1)[0],
                            "load_average": os.getloadavg()}
    finally:
        if proc is not None:
            stop_server(proc)
    print(report(results))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
