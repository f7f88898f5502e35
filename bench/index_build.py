"""bench.index_build: build the catalogue index from a database filled by load.py, once.

Prints the build time, the process's resident memory before and after (and its peak), the size
of the serialized snapshot and the time to write and read it back.

    python bench/index_build.py --database-url postgresql://postgres@127.0.0.1:5432/cartotheca_bench
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from cartotheca.catalogue.index.build import build
from cartotheca.catalogue.index.snapshot import dumps, loads
from cartotheca.db.session import make_engine
from cartotheca.settings import Settings


def rss_mib() -> float:
    status = Path("/proc/self/status").read_text()
    return int(status.split("VmRSS:")[1].split()[0]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data"))
    args = parser.parse_args()
    engine = make_engine(Settings(DATABASE_URL=args.database_url, DATA_DIR=args.data_dir))
    before = rss_mib()
    t0 = time.perf_counter()
    bitmaps, _head = build(engine)
    t1 = time.perf_counter()
    after = rss_mib()
    blob = dumps(bitmaps)
    t2 = time.perf_counter()
    loads(blob)
    t3 = time.perf_counter()
    count = sum(len(m) for m in bitmaps.by.values()) + len(bitmaps.state) + 1
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"resources {len(bitmaps.all):,}, bitmaps {count}, build {t1 - t0:.1f} s, "
          f"RSS {before:.0f} -> {after:.0f} MiB (peak {peak:.0f} MiB), "
          f"snapshot {len(blob) / 2**20:.1f} MiB, dumps {t2 - t1:.2f} s, loads {(t3 - t2) * 1000:.0f} ms")
    engine.dispose()


if __name__ == "__main__":
    main()
