"""bench.interleaved: the list scenarios of bench/run.py against two servers, in alternating blocks.

Each side is ``cartotheca serve`` (one worker) started from its own source tree on its own copy of
a database filled by load.py, so two versions of the code (or two settings) are measured in the
same minutes: block after block, the sides take turns, and whichever goes first alternates, so a
change in the machine's load falls on both. Two single runs of bench/run.py, one after the other,
cannot tell differences of a few milliseconds from that drift.

    python bench/interleaved.py \\
        --side before=../before-tree,sqlite:////tmp/lb/before.sqlite3 \\
        --side after=.,sqlite:////tmp/lb/after.sqlite3,CARTOTHECA_CATALOGUE_INDEX_ENABLED=false
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import load  # noqa: E402  (bench/ is a folder of scripts, not a package)
import run  # noqa: E402
from loadgen import Client  # noqa: E402


@dataclass
class Side:
    name: str
    tree: Path
    database_url: str
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    proc: subprocess.Popen | None = None

    @classmethod
    def parse(cls, text: str) -> Side:
        name, _, rest = text.partition("=")
        tree, database_url, *extra = rest.split(",")
        env = dict(item.split("=", 1) for item in extra)
        return cls(name, Path(tree).resolve(), database_url, env)

    def start(self, data_dir: Path) -> None:
        self.port = run.free_port()
        env = dict(os.environ, PYTHONPATH=str(self.tree), CARTOTHECA_DATABASE_URL=self.database_url,
                   CARTOTHECA_DATA_DIR=str(data_dir), CARTOTHECA_ADMIN_PASSWORD=load.ADMIN_PASSWORD,
                   CARTOTHECA_SITEURL=f"http://127.0.0.1:{self.port}/", CARTOTHECA_LOG_LEVEL="warning",
                   **self.env)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "cartotheca.cli", "serve", "--host", "127.0.0.1",
             "--port", str(self.port), "--workers", "1"],
            cwd=self.tree, env=env, stdout=subprocess.DEVNULL)
        client = Client("127.0.0.1", self.port)
        deadline = time.monotonic() + 120
        while True:
            try:
                if client.get("/api/v2/", {})[0] == 200:
                    break
            except OSError:
                client.close()
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"{self.name}: the server did not start")
            time.sleep(0.2)
        client.close()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            self.proc.wait(timeout=30)


def block(client: Client, case: dict, size: int) -> list[float]:
    times = []
    for _ in range(size):
        t0 = time.perf_counter()
        status, _ = client.get(case["path"], case["headers"])
        times.append((time.perf_counter() - t0) * 1000)
        if status != 200:
            raise SystemExit(f"{case['name']}: HTTP {status}")
    return times


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", action="append", required=True, type=Side.parse,
                        help="NAME=TREE,DATABASE_URL[,ENV=VALUE...]; give it twice")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=20, help="requests per side per round")
    parser.add_argument("--only", action="append", default=[],
                        help="scenario names starting with this (default: all)")
    args = parser.parse_args(argv)
    if len(args.side) != 2:
        parser.error("give --side twice")

    first = args.side[0]
    settings = load.settings_for(first.database_url, Path(tempfile.mkdtemp()))
    cases = run.scenarios(max(1, int(run.totals(settings)["regular"] * 0.9) // 20), run.combo(settings))
    if args.only:
        cases = [c for c in cases if any(c["name"].startswith(prefix) for prefix in args.only)]
    with tempfile.TemporaryDirectory() as work:
        for side in args.side:
            side.start(Path(work) / side.name)
        try:
            clients = {side.name: Client("127.0.0.1", side.port) for side in args.side}
            times: dict[tuple[str, str], list[float]] = {}
            for case in cases:
                for client in clients.values():
                    block(client, case, 3)  # warm-up: connection, Basic-auth cache, pages
            for round_number in range(args.rounds):
                order = args.side if round_number % 2 == 0 else args.side[::-1]
                for case in cases:
                    for side in order:
                        times.setdefault((case["name"], side.name), []).extend(
                            block(clients[side.name], case, args.block))
                print(f"  round {round_number + 1} of {args.rounds}", file=sys.stderr, flush=True)
        finally:
            for side in args.side:
                side.stop()

    a, b = (side.name for side in args.side)
    print(f"| scenario | {a} median ms | {b} median ms | {b} / {a} | {a} min | {b} min | requests each |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for case in cases:
        ta, tb = times[(case["name"], a)], times[(case["name"], b)]
        ma, mb = statistics.median(ta), statistics.median(tb)
        print(f"| {case['name']} | {ma:.1f} | {mb:.1f} | {mb / ma:.2f} | {min(ta):.1f} | {min(tb):.1f} "
              f"| {len(ta)} |")


if __name__ == "__main__":
    main()
