"""cartotheca.cli: serve, migrate, createsuperuser, the management commands; thin wrappers over the
modules they call."""

from __future__ import annotations

import json
import os
import sys

import click
import uvicorn

from cartotheca import __version__, memory, siteurl, timeutil
from cartotheca.catalogue import accounts, oauth
from cartotheca.catalogue.auth import configure_password_hashing
from cartotheca.db.migrate import upgrade
from cartotheca.db.session import make_engine, make_sessionmaker
from cartotheca.errors import CartothecaError
from cartotheca.filestore.stores import ConfigurationError, open_file_store
from cartotheca.management.commands import COMMANDS, get_command, run_now
from cartotheca.monitoring.collector import collect_once
from cartotheca.server import ServerLimits, uvicorn_options
from cartotheca.settings import Settings, get_settings


def _settings() -> Settings:
    return get_settings()


@click.group()
@click.version_option(__version__, prog_name="cartotheca")
def main() -> None:
    """Cartotheca: a geospatial catalogue speaking the GeoNode REST API v2."""


@main.command()
@click.option("--host", default=None, help="address to bind (CARTOTHECA_HOST, default 127.0.0.1)")
@click.option("--port", default=None, type=int, help="port (CARTOTHECA_PORT, default 8000)")
@click.option("--workers", default=None, type=int, help="server processes (CARTOTHECA_WORKERS)")
@click.option("--limit-concurrency", default=None, type=int,
              help="connections or running requests per process before 503 (CARTOTHECA_LIMIT_CONCURRENCY)")
@click.option("--keep-alive-timeout", default=None, type=int,
              help="seconds an idle keep-alive connection stays open (CARTOTHECA_KEEP_ALIVE_TIMEOUT)")
@click.option("--forwarded-allow-ips", default=None,
              help="comma-separated proxy addresses whose X-Forwarded-* headers are believed "
                   "(CARTOTHECA_FORWARDED_ALLOW_IPS)")
@click.option("--access-log/--no-access-log", default=None,
              help="one log line per request (CARTOTHECA_ACCESS_LOG, default on)")
def serve(host: str | None, port: int | None, workers: int | None, limit_concurrency: int | None,
          keep_alive_timeout: int | None, forwarded_allow_ips: str | None,
          access_log: bool | None) -> None:
    """Migrate the database, create the first administrator if needed, and serve."""
    memory.limit_allocator_arenas()
    if forwarded_allow_ips is not None:
        # Through the environment, so every server process's app reads it with its settings.
        os.environ["CARTOTHECA_FORWARDED_ALLOW_IPS"] = json.dumps(
            [item.strip() for item in forwarded_allow_ips.split(",") if item.strip()])
    settings = _settings()
    _prepare(settings)
    limits = ServerLimits.from_settings(settings, limit_concurrency=limit_concurrency,
                                        keep_alive_timeout=keep_alive_timeout)
    _announce(host or settings.HOST, port or settings.PORT, settings)
    uvicorn.run(
        "cartotheca.api.app:app_factory",
        factory=True,
        host=host or settings.HOST,
        port=port or settings.PORT,
        workers=workers or settings.WORKERS,
        # The app reads the proxy headers itself (cartotheca.api.site), from FORWARDED_ALLOW_IPS.
        proxy_headers=False,
        log_level=settings.LOG_LEVEL,
        access_log=settings.ACCESS_LOG if access_log is None else access_log,
        **uvicorn_options(limits),
    )


def _announce(host: str, port: int, settings: Settings) -> None:
    """Say where the server listens and which site URL its answers carry."""
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"Serving on http://{shown}:{port}/")
    if siteurl.is_configured(settings):
        click.echo(f"Advertised site URL: {settings.SITEURL} (SITEURL)")
    else:
        click.echo("Advertised site URL: built from each request (SITEURL is not set); "
                   f"proxies believed: {', '.join(settings.FORWARDED_ALLOW_IPS) or 'none'}")


def _prepare(settings: Settings, *, create_admin: bool = True, announce: bool = True) -> None:
    try:
        open_file_store(settings)
    except ConfigurationError as exc:
        raise click.ClickException(str(exc)) from None
    configure_password_hashing(settings)
    engine = make_engine(settings)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        result = accounts.bootstrap(session, settings, create_admin=create_admin)
        session.commit()
    engine.dispose()
    if result.admin_created:
        click.echo(f"Created administrator '{result.username}'.")
        if result.generated_password:
            click.echo(f"Its password (shown once): {result.generated_password}")
    if announce:
        click.echo(f"Data directory: {settings.DATA_DIR.resolve()}")


@main.command()
@click.option("--concurrency", default=None, type=int, help="parallel executions (EXECUTION_WORKERS)")
@click.option("--loglevel", default="info")
@click.option("--beat", is_flag=True,
              help="also schedule periodic tasks (the monitoring collection cycle); run it in one worker")
def worker(concurrency: int | None, loglevel: str, beat: bool) -> None:
    """Run a Celery worker for executions (TASK_BACKEND=celery, broker CELERY_BROKER_URL)."""
    memory.limit_allocator_arenas()
    settings = _settings()
    _prepare(settings, create_admin=False)
    # Celery and the job table load only for this command: ~0.3 s of start-up that serve,
    # migrate and the management commands do not need.
    from cartotheca.cli.worker import compose_worker  # noqa: PLC0415

    memory.FreeMemoryReleaser(settings.MEMORY_RELEASE_INTERVAL).start()
    compose_worker(settings).worker_main([
        "worker", f"--loglevel={loglevel}", "--pool=threads",
        f"--concurrency={concurrency or settings.EXECUTION_WORKERS}",
        "--without-gossip", "--without-mingle",
        *(["--beat", f"--schedule={settings.ensure_data_dir() / 'celerybeat-schedule'}"] if beat else []),
    ])


@main.group()
def monitoring() -> None:
    """Monitoring: usage metrics, exceptions and notifications."""


@monitoring.command("collect")
@click.option("--until", default=None, help="aggregate the periods ending by this UTC time (ISO 8601)")
def monitoring_collect(until: str | None) -> None:
    """Run one collection cycle: aggregate finished periods, evaluate notification checks."""
    settings = _settings()
    _prepare(settings, create_admin=False)
    moment = timeutil.read_datetime(until, form=True) if until else None
    if until and moment is None:
        raise click.BadParameter(f"not a date/time: {until}", param_hint="--until")
    engine = make_engine(settings)
    try:
        report = collect_once(settings, make_sessionmaker(engine), until=moment)
    finally:
        engine.dispose()
    click.echo(f"Aggregated {len(report.periods)} period(s); {len(report.alerts)} failing check(s); "
               f"{len(report.mailed)} alert(s) e-mailed.")


@main.command()
def migrate() -> None:
    """Bring the database schema up to date (and seed reference data)."""
    _prepare(_settings())
    click.echo("Database is up to date.")


@main.command()
@click.option("--username", required=False)
@click.option("--email", default="")
@click.option("--password", default=None, help="or CARTOTHECA_SUPERUSER_PASSWORD")
@click.option("--noinput", "--no-input", "noinput", is_flag=True, help="never prompt")
def createsuperuser(username: str | None, email: str, password: str | None, noinput: bool) -> None:
    """Create an administrator account."""
    password = password or os.environ.get("CARTOTHECA_SUPERUSER_PASSWORD")
    if not username:
        if noinput:
            raise click.UsageError("--username is required with --noinput")
        username = click.prompt("Username")
    if not password:
        if noinput:
            raise click.UsageError("a password is required with --noinput "
                                   "(--password or CARTOTHECA_SUPERUSER_PASSWORD)")
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    settings = _settings()
    configure_password_hashing(settings)
    engine = make_engine(settings)
    upgrade(engine)
    with make_sessionmaker(engine)() as session:
        try:
            accounts.bootstrap(session, settings, create_admin=False)
            accounts.create_user(session, username=username, password=password, email=email,
                                 is_staff=True, is_superuser=True)
        except CartothecaError as exc:
            click.echo(f"Error: {exc.message}", err=True)
            sys.exit(1)
        session.commit()
    click.echo(f"Superuser '{username}' created.")


@main.group("oauth-application")
def oauth_application() -> None:
    """OAuth2 applications (clients of /o/token/): create, list, delete."""


def _split_grants(_ctx, _param, value: str) -> list[str]:
    return [item.strip() for item in value.split(",") if item.strip()]


@oauth_application.command("create")
@click.option("--name", required=True, help="what the application is called")
@click.option("--client-type", type=click.Choice(oauth.CLIENT_TYPES), default="confidential",
              show_default=True, help="public clients have no secret")
@click.option("--grant", "grants", default="password", show_default=True, callback=_split_grants,
              help=f"comma-separated grant types, among {', '.join(oauth.GRANT_TYPES)}")
@click.option("--redirect-uri", "redirect_uris", multiple=True, help="allowed redirect URI (repeatable)")
@click.option("--user", "username", default=None,
              help="owner, as whom client_credentials tokens act")
@click.option("--json", "as_json", is_flag=True, help="print {client_id, client_secret} as JSON")
def oauth_application_create(name: str, client_type: str, grants: list[str],
                             redirect_uris: tuple[str, ...], username: str | None,
                             as_json: bool) -> None:
    """Register an application; prints its client id and (confidential clients) its secret, once."""
    def create(session):
        owner = oauth.user_named(session, username) if username else None
        application, secret = oauth.create_application(
            session, name=name, user=owner, client_type=client_type, grant_types=grants,
            redirect_uris=list(redirect_uris))
        return application.client_id, secret

    client_id, secret = _in_session(create)
    if as_json:
        click.echo(json.dumps({"client_id": client_id, "client_secret": secret}))
        return
    click.echo(f"Client id: {client_id}")
    if secret:
        click.echo(f"Client secret (shown once, only a hash is kept): {secret}")


@oauth_application.command("list")
@click.option("--json", "as_json", is_flag=True, help="print the applications as a JSON list")
def oauth_application_list(as_json: bool) -> None:
    """The registered applications (their secrets are not kept in clear, so never shown)."""
    records = _in_session(oauth.list_applications)
    if as_json:
        click.echo(json.dumps(records))
        return
    for record in records:
        click.echo(f"{record['client_id']}\t{record['name']}\t{record['client_type']}\t"
                   f"{','.join(record['grant_types'])}\t{record['user'] or '-'}")


@oauth_application.command("delete")
@click.argument("client_id")
def oauth_application_delete(client_id: str) -> None:
    """Remove an application and revoke every token issued through it."""
    name = _in_session(lambda session: oauth.delete_application(session, client_id).name)
    click.echo(f"Deleted application '{name}' ({client_id}).")


def _in_session(work):
    """``work(session)`` on a migrated database, committed; a refusal exits with its message."""
    settings = _settings()
    _prepare(settings, create_admin=False, announce=False)  # stdout carries only the answer
    engine = make_engine(settings)
    try:
        with make_sessionmaker(engine)() as session:
            result = work(session)
            session.commit()
            return result
    except CartothecaError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        sys.exit(1)
    finally:
        engine.dispose()


def _management_command(command) -> click.Command:
    """A ``cartotheca <name>`` subcommand from a management command's own option declarations."""
    params = [
        click.Option([*option.flags, option.dest], is_flag=option.flag, multiple=option.multiple,
                     type=None if option.flag else option.type,
                     default=() if option.multiple else (False if option.flag else option.default),
                     metavar=option.metavar, help=option.help)
        for option in command.options
    ]

    def callback(**values) -> None:
        _run_management(command.name, {k: list(v) if isinstance(v, tuple) else v for k, v in values.items()})

    return click.Command(command.name, params=params, callback=callback, help=command.help)


def _run_management(name: str, values: dict) -> None:
    try:
        get_command(name).parse([], values)  # refuse bad options before touching the database
        settings = _settings()
        _prepare(settings, create_admin=False)
        engine = make_engine(settings)
        try:
            with make_sessionmaker(engine)() as session:
                run_now(name, session, settings, values, click.echo)
        finally:
            engine.dispose()
    except CartothecaError as exc:
        click.echo(f"Error: {exc.message}", err=True)
        sys.exit(1)


def _add_management_commands() -> None:
    for command in COMMANDS.values():
        main.add_command(_management_command(command))


_add_management_commands()
