"""bench.load: fill a Cartotheca database with N synthetic resources for the list benchmarks.

The shape follows the GeoNode measurement in performance-targets.md: ~100 owners, a few groups,
1-3 keywords from a vocabulary of ~500, a seeded region and category, a lon/lat extent;
1/2 public, 1/4 private, 1/4 shared with one group. Rows go in with executemany (SQLite) or
COPY (PostgreSQL) in large batches, never through the ORM one by one.

    python bench/load.py --database-url sqlite:///bench/data/bench.sqlite3 -n 100000
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path

from sqlalchemy import Engine, Table, select, text

from cartotheca.catalogue import accounts
from cartotheca.catalogue.auth import hash_password
from cartotheca.db.migrate import upgrade
from cartotheca.db.models import (
    Category,
    ContactRole,
    Group,
    GroupMember,
    GroupProfile,
    Keyword,
    Region,
    Resource,
    ResourcePermission,
    User,
    resource_keywords,
    resource_regions,
)
from cartotheca.db.session import make_engine, make_sessionmaker
from cartotheca.settings import Settings

ADMIN_USER, ADMIN_PASSWORD = "admin", "bench-admin-pass"
USER_PASSWORD = "bench-user-pass"
REGULAR_USER = "owner001"  # member of every group: sees about 3/4 of the catalogue
N_OWNERS, N_GROUPS, N_KEYWORDS, N_WORDS = 100, 4, 500, 2000
BATCH = 20_000
EPOCH = dt.datetime(2015, 1, 1)


def vocabulary(seed: int, count: int) -> list[str]:
    """Pronounceable made-up words, distinct, so substring search hits are predictable."""
    rng = random.Random(seed)
    onsets = ["b", "c", "d", "f", "g", "l", "m", "n", "p", "r", "s", "t", "v", "br", "tr", "st"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ou"]
    codas = ["", "n", "r", "s", "l", "x", "nd", "rt"]
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < count:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(2, 3)))
        word += rng.choice(codas)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


WORDS = vocabulary(1, N_WORDS)
KEYWORDS = [f"kw-{w}" for w in vocabulary(2, N_KEYWORDS)]


def settings_for(url: str, data_dir: Path) -> Settings:
    return Settings(DATABASE_URL=url, DATA_DIR=data_dir, ADMIN_USER=ADMIN_USER,
                    ADMIN_PASSWORD=ADMIN_PASSWORD)


def prepare(engine: Engine, settings: Settings) -> dict:
    """Migrate, bootstrap, and create owners, groups and keywords (small: through the ORM)."""
    upgrade(engine)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        accounts.bootstrap(session, settings)
        anonymous_id, _ = accounts.internal_group_ids(session, settings)
        session.commit()
        owners = list(session.scalars(select(User).where(User.username.like("owner%"))
                                      .order_by(User.id)))
        if not owners:
            # One argon2 hash shared by all owners: hashing 100 passwords would dominate small loads.
            hashed = hash_password(USER_PASSWORD)
            owners = [User(username=f"owner{i:03d}", password=hashed, email=f"owner{i:03d}@example.org",
                           first_name=WORDS[i].title(), last_name=WORDS[i + 100].title())
                      for i in range(1, N_OWNERS + 1)]
            session.add_all(owners)
            session.flush()
            rng = random.Random(3)
            for g in range(1, N_GROUPS + 1):
                group = Group(name=f"bench-group-{g}")
                session.add(group)
                session.flush()
                session.add(GroupProfile(group_id=group.id, title=f"Bench group {g}",
                                         slug=f"bench-group-{g}", description="benchmark group"))
                members = {owners[0].id} | {o.id for o in rng.sample(owners, 20)}
                session.add_all(GroupMember(group_id=group.id, user_id=uid, role="member")
                                for uid in sorted(members))
            have = set(session.scalars(select(Keyword.name)))
            session.add_all(Keyword(name=k, slug=k, path=f"{i:04d}", depth=1)
                            for i, k in enumerate(KEYWORDS) if k not in have)
            session.commit()
        groups = list(session.scalars(select(Group.id).where(Group.name.like("bench-group-%"))
                                      .order_by(Group.id)))
        keyword_ids = list(session.scalars(select(Keyword.id).where(Keyword.name.like("kw-%"))
                                           .order_by(Keyword.id)))
        regions = [(r.id, (r.bbox_x0, r.bbox_y0, r.bbox_x1, r.bbox_y1))
                   for r in session.scalars(select(Region).where(Region.parent_id.is_not(None)))]
        categories = list(session.scalars(select(Category.id).order_by(Category.id)))
        first_id = (session.scalar(select(Resource.id).order_by(Resource.id.desc()).limit(1)) or 0) + 1
        return dict(owners=[o.id for o in owners], groups=groups, keywords=keyword_ids,
                    regions=regions, categories=categories, anonymous=anonymous_id,
                    first_id=first_id)


def full_columns(table: Table, given: Sequence[str]) -> tuple[list[str], list[object]]:
    """Columns not given but NOT NULL get their ORM scalar default (defaults are client-side)."""
    extra, values = [], []
    for column in table.columns:
        if column.name in given or column.name == "id" or column.nullable:
            continue
        default = column.default
        if default is None or not default.is_scalar:
            raise SystemExit(f"load.py does not fill {table.name}.{column.name}; add it to the rows")
        extra.append(column.name)
        values.append(default.arg)
    return list(given) + extra, values


RESOURCE_COLS = (
    "id", "uuid", "resource_type", "subtype", "title", "abstract", "name", "alternate", "owner_id",
    "category_id", "date", "date_type", "created", "last_updated", "language", "srid",
    "bbox_x0", "bbox_y0", "bbox_x1", "bbox_y1", "ll_minx", "ll_miny", "ll_maxx", "ll_maxy",
    "popular_count", "featured",
)


def generate(ctx: dict, start: int, count: int, rng: random.Random, stamp) -> dict[str, list]:
    """One batch of rows for every table, as plain tuples in the column orders used below."""
    out: dict[str, list] = {"resources": [], "kw": [], "rg": [], "perm": [], "contacts": []}
    owners, groups, keywords = ctx["owners"], ctx["groups"], ctx["keywords"]
    for rid in range(start, start + count):
        rtype = rng.choices(("dataset", "document", "map"), (7, 2, 1))[0]
        subtype = rng.choice(("vector", "raster")) if rtype == "dataset" else None
        title = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 6))).capitalize()
        abstract = " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 30))) + "."
        name = f"layer_{rid}" if rtype == "dataset" else None
        region_id, (x0, y0, x1, y1) = rng.choice(ctx["regions"])
        w, h = rng.uniform(0.05, 10.0), rng.uniform(0.05, 8.0)
        minx = rng.uniform(x0, max(x0, x1 - w))
        miny = rng.uniform(y0, max(y0, y1 - h))
        maxx, maxy = min(minx + w, 180.0), min(miny + h, 90.0)
        created = stamp(EPOCH + dt.timedelta(minutes=rid * 7 + rng.randint(0, 6)))
        owner = owners[rng.randrange(len(owners))]
        out["resources"].append((
            rid, str(uuid.UUID(int=rng.getrandbits(128), version=4)), rtype, subtype, title, abstract,
            name, f"geonode:{name}" if name else None, owner, rng.choice(ctx["categories"]),
            created, "publication", created, created, "eng", "EPSG:4326",
            minx, miny, maxx, maxy, minx, miny, maxx, maxy,
            rng.randint(0, 500), rng.random() < 0.02,
        ))
        for kid in rng.sample(keywords, rng.randint(1, 3)):
            out["kw"].append((rid, kid))
        out["rg"].append((rid, region_id))
        out["contacts"].append((rid, owner, "poc"))
        out["contacts"].append((rid, owner, "metadata_author"))
        share = rng.random()
        if share < 0.5:  # public: what GeoNode's default perm spec grants the anonymous group
            out["perm"].append((rid, None, ctx["anonymous"], "view_resourcebase"))
            out["perm"].append((rid, None, ctx["anonymous"], "download_resourcebase"))
        elif share < 0.75:  # shared with one group
            out["perm"].append((rid, None, groups[rng.randrange(len(groups))], "view_resourcebase"))
        # else private: only the owner, who sees it through owner_id
    return out


TABLES = {
    "resources": (Resource.__table__, RESOURCE_COLS),
    "kw": (resource_keywords, ("resource_id", "keyword_id")),
    "rg": (resource_regions, ("resource_id", "region_id")),
    "perm": (ResourcePermission.__table__, ("resource_id", "user_id", "group_id", "codename")),
    "contacts": (ContactRole.__table__, ("resource_id", "user_id", "role")),
}


def _plans() -> dict[str, tuple[str, list[str], list[object]]]:
    plans = {}
    for key, (table, given) in TABLES.items():
        cols, defaults = full_columns(table, given)
        plans[key] = (table.name, cols, defaults)
    return plans


def insert_sqlite(dbapi, plans, batch: dict[str, list]) -> None:
    cur = dbapi.cursor()
    for key, (name, cols, defaults) in plans.items():
        sql = f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
        tail = tuple(defaults)
        cur.executemany(sql, (row + tail for row in batch[key]))
    dbapi.commit()


def insert_postgres(dbapi, plans, batch: dict[str, list]) -> None:
    with dbapi.cursor() as cur:
        for key, (name, cols, defaults) in plans.items():
            tail = tuple(defaults)
            with cur.copy(f"COPY {name} ({', '.join(cols)}) FROM STDIN") as copy:
                for row in batch[key]:
                    copy.write_row(row + tail)
    dbapi.commit()


def sqlite_stamp(value: dt.datetime) -> str:
    # SQLAlchemy's SQLite DATETIME storage format; str() would drop a zero microsecond part.
    return value.strftime("%Y-%m-%d %H:%M:%S.%f")


def load(url: str, n: int, data_dir: Path, seed: int = 42) -> None:
    settings = settings_for(url, data_dir)
    engine = make_engine(settings)
    t0 = time.perf_counter()
    ctx = prepare(engine, settings)
    dialect = engine.dialect.name
    plans = _plans()
    rng = random.Random(seed + ctx["first_id"])
    stamp = sqlite_stamp if dialect == "sqlite" else (lambda v: v)
    insert = insert_sqlite if dialect == "sqlite" else insert_postgres
    raw = engine.raw_connection()
    dbapi = raw.driver_connection
    done, start = 0, ctx["first_id"]
    try:
        if dialect == "sqlite":
            # A throwaway benchmark file: durability during the load buys nothing.
            dbapi.execute("PRAGMA synchronous=OFF")
        while done < n:
            count = min(BATCH, n - done)
            insert(dbapi, plans, generate(ctx, start + done, count, rng, stamp))
            done += count
            rate = done / (time.perf_counter() - t0)
            print(f"  {done:>9,} resources  ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    finally:
        raw.close()
    t_rows = time.perf_counter() - t0
    finish(engine)
    engine.dispose()
    print(f"loaded {n:,} resources into {dialect} in {t_rows:.1f}s "
          f"(+{time.perf_counter() - t0 - t_rows:.1f}s analyze)")


def finish(engine: Engine) -> None:
    """Sequences past the explicit ids, planner statistics, and a check of the R*Tree."""
    if engine.dialect.name == "postgresql":
        with engine.begin() as conn:
            conn.execute(text("SELECT setval(pg_get_serial_sequence('resources', 'id'), "
                              "(SELECT max(id) FROM resources))"))
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE"))
        return
    with engine.begin() as conn:
        conn.execute(text("ANALYZE"))
        # The insert triggers fill resources_extent row by row; a miss here means they were skipped.
        boxed = conn.scalar(text("SELECT count(*) FROM resources WHERE ll_minx IS NOT NULL"))
        indexed = conn.scalar(text("SELECT count(*) FROM resources_extent"))
        if boxed != indexed:
            raise SystemExit(f"resources_extent has {indexed} rows for {boxed} boxed resources")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", required=True)
    parser.add_argument("-n", type=int, default=100_000, help="resources to add")
    parser.add_argument("--data-dir", type=Path, default=Path("bench/data"))
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args(argv)
    load(args.database_url, args.n, args.data_dir, args.seed)


if __name__ == "__main__":
    main()
