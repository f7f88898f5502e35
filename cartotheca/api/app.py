"""cartotheca.api.app: create_app(settings) puts routers, middleware, handlers and state together."""

from __future__ import annotations

import logging
import re
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from cartotheca import __version__, memory, web
from cartotheca.api.bulkhead import Bulkhead
from cartotheca.api.deps import AppState
from cartotheca.api.errors import add_exception_handlers
from cartotheca.api.routes import (
    auth,
    csw,
    datasets,
    discovery,
    documents,
    downloads,
    executions,
    facets,
    geoapps,
    groups,
    harvesters,
    management,
    mapclient,
    maps,
    metadata,
    monitoring,
    oauth_applications,
    ows,
    reference,
    resource_extras,
    resource_operations,
    resources,
    styles,
    thumbnails,
    tiles,
    upload_limits,
    uploads,
    users,
)
from cartotheca.api.site import SiteMiddleware
from cartotheca.catalogue import accounts, events
from cartotheca.catalogue.auth import InternalGroups, configure_password_hashing
from cartotheca.catalogue.families import build_kinds
from cartotheca.catalogue.harvesting.scheduling import Scheduler
from cartotheca.catalogue.index import CatalogueIndex, IndexedCounts
from cartotheca.db.migrate import upgrade
from cartotheca.db.session import (
    PoolSize,
    background_pool,
    make_engine,
    make_read_sessionmaker,
    make_sessionmaker,
    request_pool,
)
from cartotheca.filestore.stores import open_file_store

# The stores and their libraries (pyarrow, pyogrio, rasterio) load here, once: imported by the
# first requests' threads at once, a library could be handed to some of them half-initialised.
from cartotheca.geodata.storage import cog, geopackage, postgis  # noqa: F401
from cartotheca.monitoring.capture import CaptureMiddleware
from cartotheca.monitoring.collector import Monitor
from cartotheca.ows import render
from cartotheca.ows.thumbnails import MapThumbnails
from cartotheca.settings import Settings, get_settings
from cartotheca.tasks.backends.inprocess import InProcessBackend
from cartotheca.tasks.engine import Backend, Engine
from cartotheca.tasks.jobs import build_engine

SLASH_OPTIONAL = ("/api/v2/", "/o/", "/api/o/", "/mapclient/")


class TrailingSlash:
    """Serve every API path with or without its trailing slash, never redirecting.

    A redirect turns a client's POST into a GET and drops DELETE bodies (requests, Qt), so
    the path is normalised before routing instead. A ``.json`` format suffix is dropped too.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            path: str = scope["path"]
            if path.startswith(SLASH_OPTIONAL) or path in ("/api/v2", "/o", "/upload/final/"):
                if path.endswith(".json") and path.startswith("/api/v2/"):
                    path = path[: -len(".json")]
                if len(path) > 1 and path.endswith("/"):
                    path = path.rstrip("/")
                if path != scope["path"]:
                    scope = dict(scope, path=path, raw_path=path.encode())
        await self.app(scope, receive, send)


def create_app(settings: Settings | None = None, *, migrate: bool = True) -> FastAPI:
    settings = settings or get_settings()
    open_file_store(settings)
    configure_password_hashing(settings)
    # The process's catalogue connections, decided together: one each for the monitoring and
    # notification threads (engines of their own, so the requests' statements are counted and
    # pooled apart), the rest for the requests, within DATABASE_POOL_SIZE + MAX_OVERFLOW.
    monitoring = settings.MONITORING_ENABLED
    notifying = settings.TASK_BACKEND != "celery"
    indexing = INDEX_CONNECTIONS if settings.CATALOGUE_INDEX_ENABLED else 0
    engine = make_engine(settings, request_pool(settings, background=monitoring + notifying + indexing))
    if migrate:
        upgrade(engine)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        accounts.bootstrap(session, settings)
        anonymous_id, registered_id = accounts.internal_group_ids(session, settings)
        session.commit()

    kinds = build_kinds(MapThumbnails(), render.forget_data)
    tasks = build_engine(settings, sessions, kinds)
    monitor = Monitor.for_app(settings, sessions, make_engine(settings, background_pool(settings))) \
        if monitoring else None
    index = build_index(settings)

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        # Synchronous routes, dependencies and streamed bodies run on AnyIO's thread pool;
        # sized with the database pool (README "Database connections") so request threads do
        # not queue for connections.
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.THREAD_POOL_SIZE
        # Worker threads (or the Celery producer) live as long as the served app.
        backend = start_backend(tasks)
        # Notices are delivered by this process's thread, or by the Celery workers (scale-out).
        notifier = events.Dispatcher(settings, make_engine(settings, background_pool(settings))) \
            if notifying else None
        wake_workers = getattr(backend, "request_notifications", None) if notifier is None else None
        if notifier is not None:
            notifier.start()
        elif wake_workers is not None:
            events.add_waker(wake_workers)
        # Scheduled harvests: this process's thread, or a Celery beat task (scale-out).
        scheduler = Scheduler(settings, sessions, tasks.dispatch) \
            if settings.TASK_BACKEND != "celery" else None
        if scheduler is not None:
            scheduler.start()
        if monitor is not None:
            # With Celery a beat task runs the collection cycle once for every process.
            monitor.start(aggregate=settings.TASK_BACKEND != "celery")
        if index is not None:
            index.start()  # built in the background; lists and facets count in SQL meanwhile
        releaser = memory.FreeMemoryReleaser(settings.MEMORY_RELEASE_INTERVAL)
        releaser.start()
        try:
            yield
        finally:
            releaser.stop()
            if index is not None:
                index.stop()
            if monitor is not None:
                monitor.stop()
            if notifier is not None:
                notifier.stop()
            if scheduler is not None:
                scheduler.stop()
            if wake_workers is not None:
                events.remove_waker(wake_workers)
            backend.shutdown()
            tasks.backend = None

    app = FastAPI(
        title="Cartotheca",
        version=__version__,
        description="Geospatial catalogue and publishing service (GeoNode REST API v2).",
        openapi_url="/api/v2/openapi.json",
        docs_url="/api/v2/docs",
        redoc_url=None,
        lifespan=lifespan,
        redirect_slashes=False,
    )
    app.state.cartotheca = AppState(
        settings=settings,
        engine=engine,
        sessions=sessions,
        read_sessions=make_read_sessionmaker(engine),
        groups=InternalGroups(anonymous_id, registered_id),
        exempt=[re.compile(p) for p in settings.AUTH_EXEMPT_URLS],
        tasks=tasks,
        kinds=kinds,
        bulkhead=Bulkhead.from_settings(settings),
        counts=IndexedCounts(index) if index is not None else None,
    )
    app.state.monitoring = monitor
    app.state.catalogue_index = index
    add_exception_handlers(app)
    include_routers(app, settings)
    app.add_middleware(TrailingSlash)
    if monitor is not None:
        # Outermost, so it times the whole request and sees the path as the client sent it.
        app.add_middleware(CaptureMiddleware, buffer=monitor.buffer,
                           skip_paths=settings.MONITORING_SKIP_PATHS)
    # Outermost: the request's site URL and a trusted proxy's client address hold for
    # everything inside, the monitoring capture included.
    app.add_middleware(SiteMiddleware, settings=settings)
    return app


def include_routers(app: FastAPI, settings: Settings) -> None:
    # The map server's routers first: routing tries each included router in turn (about 1 ms
    # over the API's), which would show on every tile and map. resource_operations,
    # resource_extras and the typed collections before resources: their fixed sub-paths must win
    # over resources/{id}/{field_name} and {collection}/{id}/{field_name}.
    for module in (tiles, ows, discovery, resource_operations, resource_extras, datasets, documents,
                   geoapps, maps, uploads, facets, resources, executions, users, groups, reference, auth,
                   downloads, styles, thumbnails, csw, metadata, monitoring, mapclient, upload_limits,
                   management, harvesters, oauth_applications):
        app.include_router(module.router)
    # The browser pages last: the API's own paths (POST /account/login ...) come first.
    web.install(app, settings)


# The index's own engine: one connection for its builds, trims and snapshots, one for re-reading
# changed resources while a build runs.
INDEX_CONNECTIONS = 2


def build_index(settings: Settings) -> CatalogueIndex | None:
    """The process's catalogue index. Its polls go through the request's own connection (they
    stand for the COUNT); builds, trims, snapshots and re-reads of changed resources through an
    engine of its own, counted in the process's connection budget."""
    if not settings.CATALOGUE_INDEX_ENABLED:
        return None
    pool = PoolSize(INDEX_CONNECTIONS, 0, background_pool(settings).timeout)
    return CatalogueIndex(make_engine(settings, pool), settings, on_built=_report_build)


def _report_build(resources: int, seconds: float) -> None:
    # The server's own log (uvicorn's), where an operator sees when exact counts get fast.
    logging.getLogger("uvicorn.error").info("catalogue index built: %d resources in %.2f s",
                                             resources, seconds)


def start_backend(tasks: Engine) -> Backend:
    """The backend TASK_BACKEND names, started and given to the engine."""
    if tasks.settings.TASK_BACKEND == "celery":
        # Celery loads only when it is the backend: ~0.3 s of start-up for every other server.
        from cartotheca.tasks.backends.celery import CeleryBackend  # noqa: PLC0415

        backend: Backend = CeleryBackend(tasks)
    elif tasks.settings.TASK_BACKEND == "inprocess":
        backend = InProcessBackend(tasks)
    else:
        raise ValueError(f"unknown TASK_BACKEND {tasks.settings.TASK_BACKEND!r}")
    tasks.backend = backend
    return backend


def app_factory() -> FastAPI:
    """Entry point for uvicorn's ``--factory`` (each worker process builds its own app)."""
    return create_app(get_settings(), migrate=False)
