"""bench.web_catalogue: how soon the catalogue page shows its first results, in Chromium.

Starts ``cartotheca serve`` on a database filled by ``load.py`` (1,000,000 resources on
PostgreSQL for the recorded figures), then opens the catalogue page in Debian's Chromium through
Playwright, each time in a fresh browser context (no cookies, no HTTP cache), and reads the
browser's own clock (``performance.now()``, zero at the start of navigation) at the first frame
where the results list is filled, and again when the facet counts are shown.

    python bench/load.py --database-url postgresql+psycopg://postgres@127.0.0.1/cartotheca_bench_1m -n 1000000
    python bench/web_catalogue.py --database-url postgresql+psycopg://postgres@127.0.0.1/cartotheca_bench_1m

Scenarios: the plain first page (anonymous and as the regular user ``owner001``, who sees
about 3/4 of the catalogue), a word search, a category facet and an area (``extent``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import load  # noqa: E402
import run  # noqa: E402

CHROMIUM = os.environ.get("CARTOTHECA_BENCH_CHROMIUM", "/usr/bin/chromium")
RESULTS_SHOWN = ("() => { const r = document.querySelector(\"#results[data-ready='true']\");"
                 " return r && r.querySelector('.result-link') ? performance.now() : false; }")
FACETS_SHOWN = ("() => document.querySelector(\"#facet-groups[data-ready='true'] .facet-count\")"
                " ? performance.now() : false")


def scenarios(settings) -> list[dict]:
    word, keyword, _box = run.combo(settings)
    return [
        {"name": "first page, anonymous", "query": "", "user": None},
        {"name": "first page, regular user", "query": "", "user": "owner001"},
        {"name": f"search '{word}'", "query": f"?q={word}", "user": None},
        {"name": "category facet", "query": "?category=inlandWaters", "user": None},
        {"name": "area 5,45,10,50", "query": "?extent=5,45,10,50", "user": None},
    ]


def measure(browser, base: str, case: dict, runs: int) -> dict:
    shown, facets, empty = [], [], 0
    for index in range(runs + 1):
        context = browser.new_context(viewport={"width": 1200, "height": 900})
        context.set_default_timeout(60_000)
        if case["user"]:
            answer = context.request.post(f"{base}account/login",
                                          data={"username": case["user"], "password": load.USER_PASSWORD})
            assert answer.ok, answer.text()
        page = context.new_page()
        page.goto(f"{base}{case['query']}", wait_until="commit")
        first = page.wait_for_function(RESULTS_SHOWN, polling="raf").json_value()
        counted = page.wait_for_function(FACETS_SHOWN, polling="raf").json_value()
        if not page.locator("#results .result-link").count():
            empty += 1
        context.close()
        if index:  # the first visit warms the server's and the database's caches
            shown.append(first / 1000)
            facets.append(counted / 1000)
    return {
        "scenario": case["name"], "runs": runs,
        "first_results_s": {"median": statistics.median(shown), "min": min(shown), "max": max(shown)},
        "facets_s": {"median": statistics.median(facets), "min": min(facets), "max": max(facets)},
        "empty_pages": empty,
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)

    from playwright.sync_api import sync_playwright
    from sqlalchemy import func, select

    from cartotheca.db.models import Resource
    from cartotheca.db.session import make_engine

    settings = load.settings_for(args.database_url, args.data_dir)
    engine = make_engine(settings)
    with engine.connect() as conn:
        total = conn.scalar(select(func.count()).select_from(Resource))
    engine.dispose()
    cases = scenarios(settings)
    port = run.free_port()
    server, _ = run.start_server(settings, port)  # returns once its catalogue index is ready
    base = f"http://127.0.0.1:{port}/"
    results = []
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                for case in cases:
                    load_before = os.getloadavg()
                    result = measure(browser, base, case, args.runs)
                    result["load"] = [round(v, 2) for v in (*load_before, *os.getloadavg())]
                    results.append(result)
                    shown = result["first_results_s"]
                    print(f"  {case['name']}: first results {shown['median']:.3f} s (min {shown['min']:.3f}, "
                          f"max {shown['max']:.3f}); facets {result['facets_s']['median']:.3f} s",
                          file=sys.stderr, flush=True)
            finally:
                browser.close()
    finally:
        server.terminate()
        server.wait(timeout=30)

    print(f"\n{total:,} resources, {engine.dialect.name}, {args.runs} runs per scenario "
          f"(after one warm-up), fresh browser context each\n")
    print("| scenario | first results median s | min s | max s | facet counts median s | load before/after |")
    print("|---|---:|---:|---:|---:|---|")
    for r in results:
        f, c = r["first_results_s"], r["facets_s"]
        loads = f"{' '.join(map(str, r['load'][:3]))} / {' '.join(map(str, r['load'][3:]))}"
        print(f"| {r['scenario']} | {f['median']:.3f} | {f['min']:.3f} | {f['max']:.3f} | "
              f"{c['median']:.3f} | {loads} |")
    if args.out:
        summary = {"resources": total, "dialect": engine.dialect.name,
                   "at": time.strftime("%Y-%m-%d %H:%M:%S"), "results": results}
        args.out.write_text(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
