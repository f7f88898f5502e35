"""cartotheca.cli: serve, migrate, createsuperuser, the management commands; thin wrappers over the
modules they call."""

from __future__ import annotations

import os
import sys

import click

from cartotheca import __version__
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
def serve(host: str | None, port: int | None, workers: int | None) -> None:
    """Migrate the database, create the first administrator if needed, and serve."""
    import uvicorn

    settings = _settings()
    _prepare(settings)
    uvicorn.run(
        "cartotheca.api.app:app_factory",
        factory=True,
        host=host or settings.HOST,
        port=port or settings.PORT,
        workers=workers or settings.WORKERS,
        proxy_headers=True,
        log_level=os.environ.get("CARTOTHECA_LOG_LEVEL", "info"),
    )


def _prepare(settings: Settings, *, create_admin: bool = True) -> None:
    from cartotheca.catalogue import accounts
    from cartotheca.db.migrate import upgrade
    from cartotheca.db.session import make_engine, make_sessionmaker

    settings.configure_process()
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
    click.echo(f"Data directory: {settings.DATA_DIR.resolve()}")


@main.command()
@click.option("--concurrency", default=None, type=int, help="parallel executions (EXECUTION_WORKERS)")
@click.option("--loglevel", default="info")
@click.option("--beat", is_flag=True,
              help="also schedule periodic tasks (the monitoring collection cycle); run it in one worker")
def worker(concurrency: int | None, loglevel: str, beat: bool) -> None:
    """Run a Celery worker for executions (TASK_BACKEND=celery, broker CELERY_BROKER_URL)."""
    settings = _settings()
    _prepare(settings, create_admin=False)
    from cartotheca.tasks.backends.celery import celery_app

    celery_app.worker_main([
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
    from cartotheca.db.session import make_engine, make_sessionmaker
    from cartotheca.monitoring.collector import collect_once
    from cartotheca.monitoring.validation import parse_timestamp

    settings = _settings()
    _prepare(settings, create_admin=False)
    moment = parse_timestamp(until) if until else None
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
    from cartotheca.catalogue import accounts
    from cartotheca.db.migrate import upgrade
    from cartotheca.db.session import make_engine, make_sessionmaker
    from cartotheca.errors import CartothecaError

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
    settings.configure_process()
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
    from cartotheca.db.session import make_engine, make_sessionmaker
    from cartotheca.errors import CartothecaError
    from cartotheca.management.commands import get_command, run_now

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
    from cartotheca.management.commands import COMMANDS

    for command in COMMANDS.values():
        main.add_command(_management_command(command))


_add_management_commands()


if __name__ == "__main__":
    main()
