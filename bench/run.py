"""bench.run: list/search/extent benchmark of GET /api/v2/resources over real HTTP.

Two parts against a database filled by bench/load.py:
1. in process (FastAPI TestClient): SQL statements per request, counted with an engine event;
   the same statements re-run directly on the DBAPI connection (the raw SQL time of the page);
   EXPLAIN of the count and page queries, written next to the JSON results;
2. over HTTP: ``cartotheca serve`` (uvicorn, one worker) on a free loopback port, driven by
   bench/loadgen.py in its own process: sequential latency, then throughput at a fixed concurrency.

    python bench/run.py --database-url sqlite:///bench/data/bench.sqlite3
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlencode

from sqlalchemy import event

sys.path.insert(0, str(Path(__file__).parent))
import load  # noqa: E402  (bench/ is a folder of scripts, not a package)

HERE = Path(__file__).parent
PAGE = "/api/v2/resources"


def basic(user: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


ADMIN = basic(load.ADMIN_USER, load.ADMIN_PASSWORD)
REGULAR = basic(load.REGULAR_USER, load.USER_PASSWORD)
SEARCH_WORD = load.WORDS[10]
KEYWORD = load.KEYWORDS[10]
EXTENT = "5,45,10,50"  # 5 x 5 degrees in Europe


def combo(settings) -> tuple[str, str, str]:
    """A title word, a keyword and a box taken from one public resource, so the combined search
    of text, keyword and extent has at least one hit (random picks would intersect to nothing)."""
    from sqlalchemy import text

    from cartotheca.db.session import make_engine

    engine = make_engine(settings)
    with engine.connect() as conn:
        row = conn.execute(text(
            "SELECT r.id, r.title, r.ll_minx, r.ll_miny, r.ll_maxx, r.ll_maxy, k.name "
            "FROM resources r JOIN resource_keywords rk ON rk.resource_id = r.id "
            "JOIN keywords k ON k.id = rk.keyword_id "
            "WHERE r.id >= (SELECT max(id) / 2 FROM resources) AND EXISTS (SELECT 1 FROM "
            "resource_permissions p WHERE p.resource_id = r.id AND p.codename = 'view_resourcebase') "
            "ORDER BY r.id LIMIT 1")).one()
    engine.dispose()
    minx, miny = max(row[2] - 5, -180), max(row[3] - 5, -90)
    maxx, maxy = min(row[4] + 5, 180), min(row[5] + 5, 90)
    return row[1].split()[1], row[6], f"{minx:.2f},{miny:.2f},{maxx:.2f},{maxy:.2f}"


def scenarios(deep_page: int, combined: tuple[str, str, str]) -> list[dict]:
    def s(name: str, headers: dict, **params) -> dict:
        query = urlencode({"page_size": 20, **params})
        return {"name": name, "path": f"{PAGE}?{query}", "headers": headers}

    return [
        s("page 1, superuser", ADMIN),
        s("page 1, regular", REGULAR),
        s("page 1, anonymous", {}),
        s("page 1 (200 rows), regular", REGULAR, page_size=200),
        s(f"deep page {deep_page}, regular", REGULAR, page=deep_page),
        s("search title, regular", REGULAR, search=SEARCH_WORD, search_fields="title"),
        s("filter{keywords.name}, regular", REGULAR, **{"filter{keywords.name}": KEYWORD}),
        s("extent, regular", REGULAR, extent=EXTENT),
        s("search+keyword+extent, regular", REGULAR, search=combined[0], search_fields="title",
          **{"filter{keywords.name}": combined[1], "extent": combined[2]}),
    ]


# ---------------------------------------------------------------------------------------
# in process


def capture(engine, client, path: str, headers: dict) -> list[tuple[str, object]]:
    """The statements of one request. Sync routes and dependencies run in AnyIO worker threads;
    background threads on the same engine (the task engine's poller, heartbeats) are left out."""
    seen: list[tuple[str, object]] = []

    def before(_conn, _cursor, statement, parameters, _context, _many):
        if threading.current_thread().name.startswith("AnyIO worker thread"):
            seen.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", before)
    try:
        response = client.get(path, headers=headers)
    finally:
        event.remove(engine, "before_cursor_execute", before)
    if response.status_code != 200:
        raise SystemExit(f"{path}: HTTP {response.status_code} {response.text[:200]}")
    return seen


def statement_times(cursor, statement: str, parameters, repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` runs of the statement, rows fetched."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cursor.execute(statement, parameters)
        cursor.fetchall()
        times.append((time.perf_counter() - t0) * 1000)
    return times


def time_statement(cursor, statement: str, parameters, repeats: int) -> float:
    return statistics.median(statement_times(cursor, statement, parameters, repeats))


def explain(cursor, dialect: str, statement: str, parameters) -> str:
    if dialect == "postgresql":
        cursor.execute("EXPLAIN (ANALYZE, BUFFERS) " + statement, parameters)
        return "\n".join(row[0] for row in cursor.fetchall())
    cursor.execute("EXPLAIN QUERY PLAN " + statement, parameters)
    return "\n".join(f"{row[0]:>3} {row[1]:>3} {row[3]}" for row in cursor.fetchall())


def count_and_page(statements: list[tuple[str, object]]) -> tuple[int, int]:
    """Positions of the count query and the page query (the first LIMIT after the count). When
    the catalogue index answers the total, its poll of the change feed stands in for the count."""
    count = next((i for i, (sql, _) in enumerate(statements) if sql.lstrip().startswith("SELECT count(")),
                 None)
    if count is None:
        count = next(i for i, (sql, _) in enumerate(statements) if "resource_changes" in sql)
    page = next(i for i, (sql, _) in enumerate(statements) if i > count and "LIMIT" in sql)
    return count, page


def in_process(settings, cases: list[dict], repeats: int, explain_path: Path) -> dict:
    from fastapi.testclient import TestClient

    from cartotheca.api.app import create_app

    app = create_app(settings, migrate=False)
    engine = app.state.cartotheca.engine
    dialect = engine.dialect.name
    out: dict[str, dict] = {}
    plans: list[str] = []
    with TestClient(app) as client:
        index = app.state.catalogue_index
        if index is not None:
            if not index.wait_ready(timeout=3600):
                raise SystemExit("the catalogue index was not built within an hour")
            # The HTTP server starts from this snapshot, as a restarted process does.
            index.write_snapshot()
        raw = engine.raw_connection()
        cursor = raw.driver_connection.cursor()
        try:
            for case in cases:
                for _ in range(2):  # warm-up: Basic-auth cache, prepared plans, page cache
                    client.get(case["path"], headers=case["headers"])
                statements = capture(engine, client, case["path"], case["headers"])
                times = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    client.get(case["path"], headers=case["headers"])
                    times.append((time.perf_counter() - t0) * 1000)
                each = [time_statement(cursor, sql, params, repeats) for sql, params in statements]
                count_i, page_i = count_and_page(statements)
                out[case["name"]] = {
                    "statements": len(statements),
                    "inproc_median_ms": statistics.median(times),
                    "raw_count_ms": each[count_i],
                    "raw_page_ms": each[page_i],
                    "raw_count_page_ms": each[count_i] + each[page_i],
                    "raw_all_ms": sum(each),
                }
                plans.append(f"=== {case['name']}: {case['path']}")
                for label, i in (("count", count_i), ("page", page_i)):
                    sql, params = statements[i]
                    plans.append(f"--- {label} ({each[i]:.2f} ms)\n{sql}\n-- params: {params!r}")
                    plans.append(explain(cursor, dialect, sql, params))
                plans.append("--- all statements: " + ", ".join(f"{t:.2f}" for t in each))
                print(f"  {case['name']}: {len(statements)} statements, "
                      f"raw count+page {out[case['name']]['raw_count_page_ms']:.2f} ms",
                      file=sys.stderr, flush=True)
        finally:
            cursor.close()
            raw.close()
    engine.dispose()
    explain_path.write_text("\n".join(plans) + "\n")
    return out


def totals(settings) -> dict[str, int]:
    from fastapi.testclient import TestClient

    from cartotheca.api.app import create_app

    app = create_app(settings, migrate=False)
    with TestClient(app) as client:
        def total(headers):
            return client.get(PAGE, params={"page_size": 1}, headers=headers).json()["total"]

        result = {"all": total(ADMIN), "regular": total(REGULAR), "anonymous": total({})}
    app.state.cartotheca.engine.dispose()
    return result


# ---------------------------------------------------------------------------------------
# over HTTP


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


INDEX_BUILT = "catalogue index built"


def start_server(settings, port: int) -> tuple[subprocess.Popen, dict[str, float]]:
    """``cartotheca serve`` on ``port``, returned once it answers and, unless the index is off,
    once its catalogue index is ready (the server's log says so), with how long each took."""
    env = dict(os.environ,
               CARTOTHECA_DATABASE_URL=settings.database_url,
               CARTOTHECA_DATA_DIR=str(settings.DATA_DIR),
               CARTOTHECA_ADMIN_PASSWORD=load.ADMIN_PASSWORD,
               CARTOTHECA_SITEURL=f"http://127.0.0.1:{port}/",
               # Info for the index's "built" line; no access log, whose line per request
               # would be measured as well.
               CARTOTHECA_LOG_LEVEL="info", CARTOTHECA_ACCESS_LOG="false")
    cmd = [sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
           "--port", str(port), "--workers", "1"]
    log_path = Path(settings.DATA_DIR) / "server.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    timings: dict[str, float] = {}
    deadline = started + 90
    while "answers_s" not in timings:
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}: see {log_path}")
        if time.monotonic() > deadline:
            proc.terminate()
            raise SystemExit("server did not answer within 90 s")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v2/", timeout=2) as r:
                if r.status == 200:
                    timings["answers_s"] = time.monotonic() - started
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.05)
    if settings.CATALOGUE_INDEX_ENABLED:
        deadline = started + 3600
        while INDEX_BUILT not in log_path.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.terminate()
                raise SystemExit(f"the server's catalogue index was not ready: see {log_path}")
            time.sleep(0.05)
        timings["index_ready_s"] = time.monotonic() - started
    print(f"  server: answers after {timings['answers_s']:.2f} s, index ready after "
          f"{timings.get('index_ready_s', float('nan')):.2f} s", file=sys.stderr, flush=True)
    return proc, timings


def memory_mib(pid: int) -> dict[str, float]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) / 1024
    return fields


def over_http(settings, cases: list[dict], args) -> tuple[dict, dict, dict]:
    port = free_port()
    proc, start = start_server(settings, port)
    try:
        job = {"host": "127.0.0.1", "port": port, "scenarios": cases, "requests": args.requests,
               "seconds": args.seconds, "concurrency": args.concurrency,
               "throughput_seconds": args.throughput_seconds}
        done = subprocess.run([sys.executable, str(HERE / "loadgen.py")], input=json.dumps(job),
                              capture_output=True, text=True, timeout=1800)
        sys.stderr.write(done.stderr)
        if done.returncode != 0:
            raise SystemExit(f"loadgen failed with {done.returncode}")
        memory = memory_mib(proc.pid)
        return json.loads(done.stdout), memory, start
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------------------


def table(results: dict) -> str:
    head = ("| scenario | HTTP min ms | median | p95 | p99 | req/s (c={c}) | in-process median ms "
            "| SQL stmts | raw count+page ms | raw all stmts ms |")
    lines = [head.format(c=next(iter(results["http"].values()))["concurrency"]),
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, h in results["http"].items():
        p = results["in_process"][name]
        lines.append(
            f"| {name} | {h['min_ms']:.1f} | {h['median_ms']:.1f} | {h['p95_ms']:.1f} | {h['p99_ms']:.1f} "
            f"| {h['rps']:.0f} "
            f"| {p['inproc_median_ms']:.1f} | {p['statements']} | {p['raw_count_page_ms']:.2f} "
            f"| {p['raw_all_ms']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    parser.add_argument("--requests", type=int, default=200, help="sequential requests per scenario")
    parser.add_argument("--seconds", type=float, default=10.0, help="cap on the sequential phase")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--throughput-seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=15, help="in-process and raw SQL repeats")
    parser.add_argument("--pg-options", default=None,
                        help='PGOPTIONS for this run and the server, e.g. "-c jit=off"')
    parser.add_argument("--out", type=Path, default=None, help="JSON results (default bench/data/)")
    args = parser.parse_args(argv)

    if args.pg_options:
        # libpq reads PGOPTIONS at connect time: a server setting tried without touching the code.
        os.environ["PGOPTIONS"] = args.pg_options
    settings = load.settings_for(args.database_url, args.data_dir)
    dialect = "sqlite" if args.database_url.startswith("sqlite") else "postgresql"
    out = args.out or args.data_dir / f"results-{dialect}.json"
    args.data_dir.mkdir(parents=True, exist_ok=True)

    counts = totals(settings)
    deep_page = max(1, int(counts["regular"] * 0.9) // 20)
    combined = combo(settings)
    cases = scenarios(deep_page, combined)
    print(f"{dialect}: {counts}", file=sys.stderr)
    print("in process:", file=sys.stderr)
    plans = out.with_name(out.stem.replace("results", "explain") + ".txt")
    inproc = in_process(settings, cases, args.repeats, plans)
    print("over HTTP:", file=sys.stderr)
    http, memory, start = over_http(settings, cases, args)
    results = {"dialect": dialect, "totals": counts, "deep_page": deep_page,
               "search_word": SEARCH_WORD, "keyword": KEYWORD, "extent": EXTENT,
               "combined": combined,
               "in_process": inproc, "http": http, "server_memory_mib": memory, "server_start": start,
               "args": {k: str(v) for k, v in vars(args).items()}}
    out.write_text(json.dumps(results, indent=2))
    print(table(results))
    print(f"\nserver memory: {memory}; server start: {start}; results in {out}")


if __name__ == "__main__":
    main()
