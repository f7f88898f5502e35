"""bench.loadgen: a small HTTP load generator, run as its own process by bench/run.py.

Reads a JSON job on stdin ({"host", "port", "scenarios": [{"name", "path", "headers"}],
"requests", "seconds", "concurrency", "throughput_seconds"}) and writes the figures as JSON on
stdout. Standard-library HTTP with keep-alive, so the client costs as little CPU as possible on a
two-core machine shared with the server. Every loop is bounded by a request count and a time.
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import threading
import time


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


class Client:
    def __init__(self, host: str, port: int):
        self.conn = http.client.HTTPConnection(host, port, timeout=120)

    def get(self, path: str, headers: dict[str, str]) -> tuple[int, int]:
        try:
            return self._get(path, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # uvicorn closes keep-alive connections idle for 5 s (e.g. during another phase).
            self.conn.close()
            return self._get(path, headers)

    def _get(self, path: str, headers: dict[str, str]) -> tuple[int, int]:
        self.conn.request("GET", path, headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        return response.status, len(body)

    def close(self) -> None:
        self.conn.close()


def latency(client: Client, scenario: dict, requests: int, seconds: float) -> dict:
    """Sequential requests: the latency of one request with the server otherwise idle."""
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    size = 0
    while len(times) < requests and (time.perf_counter() < deadline or len(times) < 5):
        t0 = time.perf_counter()
        status, size = client.get(scenario["path"], scenario["headers"])
        times.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise SystemExit(f"{scenario['name']}: HTTP {status}")
    return {
        "n": len(times),
        "median_ms": statistics.median(times),
        "p95_ms": percentile(times, 0.95),
        "p99_ms": percentile(times, 0.99),
        "min_ms": min(times),
        "bytes": size,
    }


def throughput(host: str, port: int, scenario: dict, concurrency: int, seconds: float) -> dict:
    """``concurrency`` keep-alive connections for a fixed time; completed requests per second."""
    counts = [0] * concurrency
    errors = [0] * concurrency
    stop = time.perf_counter() + seconds

    def worker(i: int) -> None:
        client = Client(host, port)
        try:
            while time.perf_counter() < stop:
                status, _ = client.get(scenario["path"], scenario["headers"])
                counts[i] += 1
                errors[i] += status != 200
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(concurrency)]
    t0 = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - t0
    return {"rps": sum(counts) / elapsed, "concurrency": concurrency, "errors": sum(errors)}


def run(job: dict) -> dict:
    host, port = job["host"], job["port"]
    results = {}
    client = Client(host, port)
    try:
        for scenario in job["scenarios"]:
            for _ in range(3):  # warm-up: connection, Basic-auth cache, database pages
                client.get(scenario["path"], scenario["headers"])
            figures = latency(client, scenario, job["requests"], job["seconds"])
            figures.update(throughput(host, port, scenario, job["concurrency"],
                                      job["throughput_seconds"]))
            results[scenario["name"]] = figures
            print(f"  {scenario['name']}: {figures['median_ms']:.1f} ms median, "
                  f"{figures['rps']:.0f} req/s", file=sys.stderr, flush=True)
    finally:
        client.close()
    return results


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout)
