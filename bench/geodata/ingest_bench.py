"""bench.geodata.ingest_bench: vector ingest throughput, Cartotheca against ogr2ogr and pyogrio.

For each storage backend and each file, in ONE run and interleaved (the order rotates every
round, so drifting machine load hits every candidate alike), each of these loads the file with
its spatial index, in a fresh process:

- ``ogr2ogr`` (Debian gdal-bin, GDAL 3.6.2): ``-f GPKG`` or ``-f PostgreSQL`` (COPY + GiST);
- the floor, pyogrio's own Arrow copy (GDAL 3.12): ``read_arrow`` + ``write_arrow`` to GPKG;
  for PostGIS (no PostgreSQL driver in the wheel) ``read_arrow`` + one COPY + GiST + ANALYZE;
- Cartotheca's storage write: ``vector_store(settings).write(SourceLayer, name)``;
- Cartotheca's publish path: ``cartotheca.catalogue.publishing.publish_files`` (what
  ``cartotheca.catalogue.publishing.publish`` and the upload API run: validation, storage write,
  attribute statistics, catalogue rows, the thumbnail of a small layer) and the commit; a large
  layer's thumbnail, drawn after the commit by a follow-up execution, is timed apart.

Every destination (file, table, data directory, catalogue and datastore database) is new for
each load and removed afterwards, outside the timing.

    python bench/geodata/ingest_bench.py --data /tmp/geobench/data --work /tmp/geobench/ingest --runs 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import (  # noqa: E402  (bench/geodata is a folder of scripts)
    HERE,
    figures,
    libpq_conninfo,
    load_average,
    log,
    sqlalchemy_url,
    throwaway_database,
    write_json,
)

FLOOR = "pyogrio Arrow copy (floor)"
WORKER = [sys.executable, str(HERE / "ingest_worker.py")]


class Candidate:
    """One way of loading a file: prepares a fresh destination, gives the command, cleans up."""

    label = ""
    in_process = True  # the process reports its own copy time (imports excluded)

    def __init__(self, backend: str, src: Path, work: Path):
        self.backend, self.src, self.work = backend, src, work

    def prepare(self, stack: ExitStack, run: int) -> list[str]:
        raise NotImplementedError


class Ogr2ogr(Candidate):
    label = "ogr2ogr (GDAL 3.6.2)"
    in_process = False

    def prepare(self, stack: ExitStack, run: int) -> list[str]:
        if self.backend == "geopackage":
            dst = self.work / f"ogr_{run}.gpkg"
            stack.callback(dst.unlink, missing_ok=True)
            return ["ogr2ogr", "-f", "GPKG", str(dst), str(self.src)]
        db = stack.enter_context(throwaway_database("bench_ogr"))
        return ["ogr2ogr", "-f", "PostgreSQL", f"PG:{libpq_conninfo(db)}", str(self.src),
                "-nln", self.src.stem, "-lco", "GEOMETRY_NAME=geom"]


class Floor(Candidate):
    label = FLOOR

    def prepare(self, stack: ExitStack, run: int) -> list[str]:
        if self.backend == "geopackage":
            dst = self.work / f"floor_{run}.gpkg"
            stack.callback(dst.unlink, missing_ok=True)
            return WORKER + ["pyogrio-gpkg", str(self.src), str(dst)]
        db = stack.enter_context(throwaway_database("bench_floor"))
        return WORKER + ["pyogrio-postgis", str(self.src), db, self.src.stem]


class StoreWrite(Candidate):
    label = "Cartotheca store write()"

    def prepare(self, stack: ExitStack, run: int) -> list[str]:
        data_dir = self.work / f"write_{run}"
        stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
        datastore = []
        if self.backend == "postgis":
            datastore = [sqlalchemy_url(stack.enter_context(throwaway_database("bench_store")))]
        return WORKER + ["store-write", str(self.src), str(data_dir), self.backend] + datastore


class Publish(Candidate):
    label = "Cartotheca publish (ingest)"

    def prepare(self, stack: ExitStack, run: int) -> list[str]:
        data_dir = self.work / f"publish_{run}"
        stack.callback(shutil.rmtree, data_dir, ignore_errors=True)
        if self.backend == "geopackage":
            return WORKER + ["publish", str(self.src), str(data_dir),
                             f"sqlite:///{data_dir / 'cartotheca.sqlite3'}", "geopackage"]
        catalogue = stack.enter_context(throwaway_database("bench_catalogue", postgis=False))
        datastore = stack.enter_context(throwaway_database("bench_datastore"))
        return WORKER + ["publish", str(self.src), str(data_dir), sqlalchemy_url(catalogue), "postgis",
                         sqlalchemy_url(datastore)]


CANDIDATES = {"ogr2ogr": Ogr2ogr, "floor": Floor, "write": StoreWrite, "publish": Publish}


def run_once(candidate: Candidate, run: int) -> dict:
    with ExitStack() as stack:
        cmd = candidate.prepare(stack, run)
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            return {"error": (done.stderr or done.stdout)[-1500:], "wall": wall}
        out = {"wall": wall}
        if candidate.in_process:
            out.update(json.loads(done.stdout.strip().splitlines()[-1]))
        else:
            out["seconds"] = wall
        return out


def measure(backend: str, src: Path, work: Path, runs: int, names: list[str]) -> dict:
    candidates = [CANDIDATES[n](backend, src, work) for n in names]
    samples: dict[str, list[dict]] = {c.label: [] for c in candidates}
    for run in range(runs):
        order = candidates[run % len(candidates):] + candidates[:run % len(candidates)]
        for candidate in order:
            result = run_once(candidate, run)
            samples[candidate.label].append(result)
            shown = (f"{result['seconds']:.2f} s" if "seconds" in result
                     else "FAILED " + result["error"][-300:])
            log(f"  {backend} {src.name} run {run + 1}: {candidate.label}: {shown} "
                f"(wall {result['wall']:.2f} s, load {load_average()})")
    return samples


def summarise(samples: dict[str, list[dict]], count: int) -> dict:
    out = {}
    for label, results in samples.items():
        ok = [r for r in results if "seconds" in r]
        if not ok:
            out[label] = {"error": results[0]["error"]}
            continue
        secs = figures([r["seconds"] for r in ok])
        out[label] = {"seconds": secs, "wall": figures([r["wall"] for r in ok]),
                      "features": ok[0].get("features", count),
                      "feat_per_s_median": count / secs["median"], "feat_per_s_best": count / secs["min"],
                      "steps": [r.get("steps") for r in ok], "failures": len(results) - len(ok)}
        deferred = [r["thumbnail_seconds"] for r in ok if r.get("thumbnail_seconds")]
        if deferred:
            out[label]["deferred_thumbnail_seconds"] = figures(deferred)
    floor = out.get(FLOOR, {}).get("seconds")
    for entry in out.values():
        if floor and "seconds" in entry:
            entry["vs_floor_median"] = floor["median"] / entry["seconds"]["median"]
            entry["vs_floor_best"] = floor["min"] / entry["seconds"]["min"]
    return out


def table(results: dict) -> str:
    lines = ["| backend | file | loader | min s | median s | features/s (median) | of floor's throughput "
             "(median / best) | process wall min / median s |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for key, per_loader in results["results"].items():
        backend, name = key.split("/")
        for label, e in per_loader.items():
            if "error" in e:
                lines.append(f"| {backend} | {name} | {label} | failed: {e['error'][-120:]!r} | | | | |")
                continue
            ratio = (f"{e['vs_floor_median']:.0%} / {e['vs_floor_best']:.0%}"
                     if "vs_floor_median" in e else "")
            lines.append(f"| {backend} | {name} | {label} | {e['seconds']['min']:.2f} | "
                         f"{e['seconds']['median']:.2f} | {e['feat_per_s_median']:,.0f} | {ratio} | "
                         f"{e['wall']['min']:.2f} / {e['wall']['median']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="output of gen_vectors.py")
    parser.add_argument("--work", type=Path, required=True, help="scratch for the copies")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", default="geopackage,postgis")
    parser.add_argument("--files", default="points.gpkg,polygons.gpkg")
    parser.add_argument("--loaders", default="ogr2ogr,floor,write,publish")
    parser.add_argument("--out", type=Path,
                        default=Path(__file__).parents[1] / "data" / "geodata-ingest.json")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    results = {"started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
               "load_before": load_average(), "runs": args.runs, "results": {}}
    import pyogrio

    for backend in args.backends.split(","):
        for name in args.files.split(","):
            src = args.data / name
            count = pyogrio.read_info(str(src))["features"]
            samples = measure(backend, src, args.work, args.runs, args.loaders.split(","))
            results["results"][f"{backend}/{name}"] = summarise(samples, count)
            write_json(args.out, results)
    results["load_after"] = load_average()
    write_json(args.out, results)
    print(table(results))
    print(f"\nload average before/after: {results['load_before']} / {results['load_after']}; "
          f"results in {args.out}")


if __name__ == "__main__":
    main()
