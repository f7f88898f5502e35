"""bench.monitoring_capture: added latency of monitoring capture on the same list request.

Two ``cartotheca serve`` processes on one database, one with MONITORING_ENABLED and one
without, are sent the same request in interleaved blocks (so machine noise hits both alike);
the medians are compared. The monitored server runs its collector thread as in production
(captured requests written every MONITORING_FLUSH_INTERVAL). The same comparison is also made
in process (two apps, FastAPI TestClient), where the capture is the only difference left.

    python bench/monitoring_capture.py                       # fresh SQLite, 10,000 resources
    python bench/monitoring_capture.py --database-url postgresql://postgres@127.0.0.1:5432/cartotheca_bench

Target (performance-targets.md): at most 5% added latency.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import load  # noqa: E402  (bench/ is a folder of scripts, not a package)
from loadgen import Client  # noqa: E402
from run import ADMIN, REGULAR, free_port, memory_mib  # noqa: E402

HERE = Path(__file__).parent
SCENARIOS = {
    "list page 1, regular user": ("/api/v2/resources?page_size=20", REGULAR),
    "list page 1, superuser": ("/api/v2/resources?page_size=20", ADMIN),
}


def start(url: str, data_dir: Path, port: int, monitoring: bool) -> subprocess.Popen:
    env = dict(os.environ, CARTOTHECA_DATABASE_URL=url, CARTOTHECA_DATA_DIR=str(data_dir),
               CARTOTHECA_ADMIN_PASSWORD=load.ADMIN_PASSWORD, CARTOTHECA_LOG_LEVEL="warning",
               CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
               CARTOTHECA_MONITORING_ENABLED="true" if monitoring else "false")
    proc = subprocess.Popen([sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1"], env=env,
                            stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/", timeout=2):
                return proc
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.2)
    proc.terminate()
    raise SystemExit("server did not become ready within 90 s")


def interleaved(timed: dict[str, callable], rounds: int, block: int, warmup: int) -> dict[str, list[float]]:
    """Blocks of ``block`` requests per side, alternating which side goes first each round."""
    for call in timed.values():
        for _ in range(warmup):
            call()
    times: dict[str, list[float]] = {name: [] for name in timed}
    names = list(timed)
    for index in range(rounds):
        for name in (names if index % 2 == 0 else names[::-1]):
            call = timed[name]
            for _ in range(block):
                t0 = time.perf_counter()
                call()
                times[name].append((time.perf_counter() - t0) * 1000)
    return times


def summary(times: dict[str, list[float]]) -> dict:
    on, off = times["on"], times["off"]
    return {
        "requests_per_side": len(on),
        "median_ms_off": statistics.median(off), "median_ms_on": statistics.median(on),
        "min_ms_off": min(off), "min_ms_on": min(on),
        "ratio_median": statistics.median(on) / statistics.median(off),
        "ratio_min": min(on) / min(off),
    }


def over_http(url: str, data_dir: Path, args) -> tuple[dict, dict]:
    ports = {"on": free_port(), "off": free_port()}
    procs = {side: start(url, data_dir, port, side == "on") for side, port in ports.items()}
    results = {}
    try:
        for name, (path, headers) in SCENARIOS.items():
            clients = {side: Client("127.0.0.1", port) for side, port in ports.items()}

            def caller(side, path=path, headers=headers, clients=clients, name=name):
                def call():
                    status, _ = clients[side].get(path, headers)
                    if status != 200:
                        raise SystemExit(f"{name}: HTTP {status} from the {side} server")
                return call

            times = interleaved({side: caller(side) for side in ports}, args.rounds, args.block, args.warmup)
            results[name] = summary(times)
            for client in clients.values():
                client.close()
        memory = {side: memory_mib(proc.pid) for side, proc in procs.items()}
    finally:
        for proc in procs.values():
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
    return results, memory


def in_process(url: str, data_dir: Path, args) -> dict:
    from fastapi.testclient import TestClient

    from cartotheca.api.app import create_app
    from cartotheca.settings import Settings

    base = dict(DATABASE_URL=url, DATA_DIR=data_dir, ADMIN_PASSWORD=load.ADMIN_PASSWORD)
    apps = {"on": create_app(Settings(**base, MONITORING_ENABLED=True), migrate=False),
            "off": create_app(Settings(**base, MONITORING_ENABLED=False), migrate=False)}
    results = {}
    with TestClient(apps["on"]) as on, TestClient(apps["off"]) as off:
        clients = {"on": on, "off": off}
        for name, (path, headers) in SCENARIOS.items():
            def caller(side, path=path, headers=headers):
                return lambda: clients[side].get(path, headers=headers)
            results[name] = summary(interleaved({side: caller(side) for side in clients},
                                                args.rounds, args.block, args.warmup))
        # The collector's share, off the request path: write what is left, aggregate every period.
        from cartotheca.db.base import utcnow
        from cartotheca.monitoring.periods import align_end

        t0 = time.perf_counter()
        report = apps["on"].state.monitoring.collect(until=align_end(utcnow(), 60))
        results["collection cycle"] = {"seconds": time.perf_counter() - t0,
                                       "periods": len(report.periods)}
    return results


def middleware_alone(calls: int) -> dict:
    """The capture's own cost: a trivial ASGI app called directly, with and without it.
    Noise on a busy machine hides a few microseconds in a request of milliseconds; this does not."""
    import asyncio

    from cartotheca.monitoring.capture import CaptureMiddleware, RequestBuffer

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"{}"})

    buffer = RequestBuffer(calls + 1)
    wrapped = CaptureMiddleware(app, buffer, ["/monitoring/"])
    scope = {"type": "http", "method": "GET", "path": "/api/v2/resources", "query_string": b"page_size=20",
             "headers": [(b"host", b"127.0.0.1"), (b"user-agent", b"bench")], "client": ("127.0.0.1", 1)}

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        pass

    async def run(target) -> float:
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(calls):
                await target(dict(scope), receive, send)
            best = min(best, time.perf_counter() - t0)
            buffer.drain()
        return best / calls * 1e6

    plain, capturing = asyncio.run(run(app)), asyncio.run(run(wrapped))
    return {"calls": calls, "us_per_request_off": plain, "us_per_request_on": capturing,
            "added_us_per_request": capturing - plain}


def captured(url: str) -> int:
    from sqlalchemy import create_engine, text

    engine = create_engine(url if not url.startswith("postgresql://") else
                           "postgresql+psycopg://" + url.split("://", 1)[1])
    with engine.connect() as conn:
        count = conn.execute(text("SELECT count(*) FROM monitoring_request_events")).scalar()
    engine.dispose()
    return count


def table(results: dict) -> str:
    lines = ["| scenario | requests per side | median off ms | median on ms | ratio (median) | "
             "min off ms | min on ms | ratio (min) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in results.items():
        if "requests_per_side" not in r:
            continue
        lines.append(f"| {name} | {r['requests_per_side']} | {r['median_ms_off']:.2f} | "
                     f"{r['median_ms_on']:.2f} | {r['ratio_median']:.3f} | {r['min_ms_off']:.2f} | "
                     f"{r['min_ms_on']:.2f} | {r['ratio_min']:.3f} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", help="an already loaded database (default: a fresh SQLite)")
    parser.add_argument("-n", type=int, default=10_000, help="resources to load into a fresh SQLite")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data" / "monitoring")
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--block", type=int, default=10, help="requests per side and round")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--calls", type=int, default=20_000, help="calls of the middleware-alone loop")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    args.data_dir.mkdir(parents=True, exist_ok=True)
    url = args.database_url
    if url is None:
        path = args.data_dir / "bench.sqlite3"
        for stale in args.data_dir.glob("bench.sqlite3*"):
            stale.unlink()
        url = f"sqlite:///{path.resolve()}"
        load.load(url, args.n, args.data_dir)
    before = captured(url)
    http, memory = over_http(url, args.data_dir, args)
    after = captured(url)
    process = in_process(url, args.data_dir, args)
    alone = middleware_alone(args.calls)
    out = {"database": url.split("://", 1)[0], "over_http": http, "in_process": process,
           "middleware_alone": alone, "memory_mib": memory,
           "requests_captured_over_http": after - before}
    print("Over HTTP (uvicorn, one worker each):")
    print(table(http))
    print("\nIn process (TestClient):")
    print(table(process))
    cycle = process["collection cycle"]
    print(f"Collection cycle after the in-process run: {cycle['seconds']:.2f} s for {cycle['periods']} "
          f"service period(s) (off the request path)")
    print(f"\nCapture alone: {alone['added_us_per_request']:.1f} µs added per request "
          f"({alone['us_per_request_off']:.1f} → {alone['us_per_request_on']:.1f} µs, best of 5 × "
          f"{alone['calls']:,} calls)")
    print(f"Requests the monitored server captured and wrote: {after - before}")
    print(f"Server memory MiB: {memory}")
    path = args.out or args.data_dir / f"results-{out['database']}.json"
    path.write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
