"""bench.facets: time GET /api/v2/facets/{facet} in process against a database filled by load.py.

For each facet and requester: statements per request, the in-process median (TestClient), and
EXPLAIN (ANALYZE, BUFFERS) of the request's counting statement, written to ``--explain``.

    python bench/facets.py --database-url postgresql://postgres@127.0.0.1:5432/cartotheca_bench
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).parent))
import load  # noqa: E402  (bench/ is a folder of scripts, not a package)
from run import ADMIN, REGULAR, capture, statement_times  # noqa: E402

FACETS = ("category", "owner", "resourcetype", "featured", "keyword", "region", "group")
WHO = (("superuser", ADMIN), ("regular", REGULAR), ("anonymous", {}))


def median_ms(client, path: str, headers: dict, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        client.get(path, headers=headers)
        times.append((time.perf_counter() - t0) * 1000)
    return statistics.median(times)


def raw_ms(engine, statement: str, parameters, repeats: int) -> tuple[float, float]:
    """Min and median of the statement re-run on a connection of the app's engine."""
    raw = engine.raw_connection()
    try:
        times = statement_times(raw.cursor(), statement, parameters, repeats)
        return min(times), statistics.median(times)
    finally:
        raw.close()


def list_count(engine, client, headers: dict) -> tuple[str, object]:
    """The resources list's own count statement for this requester (the floor to compare with)."""
    for statement, parameters in capture(engine, client, "/api/v2/resources?page_size=1", headers):
        if statement.lstrip().upper().startswith("SELECT COUNT(*)"):
            return statement, parameters
    raise SystemExit("no count statement in the resources list")


def explain(engine, statement: str, parameters) -> str:
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        prefix = "EXPLAIN (ANALYZE, BUFFERS) " if engine.dialect.name == "postgresql" \
            else "EXPLAIN QUERY PLAN "
        cursor.execute(prefix + statement, parameters)
        return "\n".join(" | ".join(str(c) for c in row) for row in cursor.fetchall())
    finally:
        raw.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data"))
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--explain", type=Path, default=Path("bench/data/explain-facets.txt"))
    args = parser.parse_args()

    from cartotheca.api.app import create_app

    app = create_app(load.settings_for(args.database_url, args.data_dir), migrate=False)
    engine = app.state.cartotheca.engine
    plans = []
    print("| facet | requester | request median ms | statements | SQL min ms | SQL median ms |")
    print("|---|---|---:|---:|---:|---:|")
    with TestClient(app) as client:
        for who, headers in WHO:
            lmin, lmed = raw_ms(engine, *list_count(engine, client, headers), args.repeats)
            print(f"| (resources list count) | {who} | | | {lmin:.1f} | {lmed:.1f} |", flush=True)
        for name in FACETS:
            for who, headers in WHO:
                path = f"/api/v2/facets/{name}"
                client.get(path, headers=headers)  # warm-up (identity cache, plans)
                statements = capture(engine, client, path, headers)
                ms = median_ms(client, path, headers, args.repeats)
                counting = statements[-1]
                smin, smed = raw_ms(engine, *counting, args.repeats)
                print(f"| {name} | {who} | {ms:.1f} | {len(statements)} | {smin:.1f} | {smed:.1f} |",
                      flush=True)
                plans.append(f"## {name}, {who}\n{counting[0]}\n\n{explain(engine, *counting)}\n")
        path = "/api/v2/facets?include_topics=true"
        for who, headers in WHO:
            client.get(path, headers=headers)
            statements = capture(engine, client, path, headers)
            ms = median_ms(client, path, headers, max(3, args.repeats // 2))
            print(f"| all (include_topics) | {who} | {ms:.1f} | {len(statements)} | | |", flush=True)
    args.explain.parent.mkdir(parents=True, exist_ok=True)
    args.explain.write_text("\n".join(plans), encoding="utf-8")
    engine.dispose()


if __name__ == "__main__":
    main()
