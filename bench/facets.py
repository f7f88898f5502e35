"""bench.facets: time GET /api/v2/facets/{facet} in process against a database filled by load.py.

For each facet and requester: statements per request, the in-process median (TestClient), and
EXPLAIN (ANALYZE, BUFFERS) of the request's last statement, written to ``--explain``.
``--index on`` (the default) waits for the catalogue index to be built and also times the
resources list's page 1 with its exact total (``--index off``: everything counted in SQL).

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


def list_count(engine, client, headers: dict) -> tuple[str, object] | None:
    """The resources list's own count statement for this requester (the floor to compare with);
    None when the catalogue index gave the total."""
    for statement, parameters in capture(engine, client, "/api/v2/resources?page_size=1", headers):
        if statement.lstrip().upper().startswith("SELECT COUNT(*)"):
            return statement, parameters
    return None


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
    parser.add_argument("--index", choices=("on", "off"), default="on")
    args = parser.parse_args()

    from cartotheca.api.app import create_app

    settings = load.settings_for(args.database_url, args.data_dir).model_copy(
        update={"CATALOGUE_INDEX_ENABLED": args.index == "on"})
    app = create_app(settings, migrate=False)
    engine = app.state.cartotheca.engine
    plans = []
    print("| facet | requester | request median ms | statements | SQL min ms | SQL median ms |")
    print("|---|---|---:|---:|---:|---:|")
    with TestClient(app) as client:
        index = app.state.catalogue_index
        if index is not None:
            t0 = time.perf_counter()
            if not index.wait_ready(timeout=600):
                raise SystemExit("the catalogue index was not built within 10 minutes")
            print(f"(index built in {time.perf_counter() - t0:.1f} s after start, "
                  f"{len(index.bitmaps.all)} resources)", flush=True)
        for who, headers in WHO:
            path = "/api/v2/resources?page_size=20"
            client.get(path, headers=headers)
            ms = median_ms(client, path, headers, args.repeats)
            count = list_count(engine, client, headers)
            if count is None:  # the index gave the total: no COUNT statement to re-run
                print(f"| (resources page 1 with total) | {who} | {ms:.1f} | | | |", flush=True)
                continue
            lmin, lmed = raw_ms(engine, *count, args.repeats)
            print(f"| (resources page 1 with total) | {who} | {ms:.1f} | | {lmin:.1f} | {lmed:.1f} |",
                  flush=True)
        for name in FACETS:
            for who, headers in WHO:
                path = f"/api/v2/facets/{name}"
                client.get(path, headers=headers)  # warm-up (identity cache, plans)
                statements = capture(engine, client, path, headers)
                ms = median_ms(client, path, headers, args.repeats)
                if not statements:  # type and featured from the index: no statement at all
                    print(f"| {name} | {who} | {ms:.1f} | 0 | | |", flush=True)
                    continue
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
