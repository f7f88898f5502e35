"""The request session's end: a session holding a connection is closed off the event loop (a
hanging database must not freeze every request of the process), one holding none on it."""

from __future__ import annotations

import threading

import anyio
from sqlalchemy import event, text
from starlette.requests import Request

from cartotheca.api.deps import close_session


def _request(app) -> Request:
    return Request({"type": "http", "app": app, "headers": [], "method": "GET", "path": "/"})


def test_a_session_holding_a_connection_is_closed_in_the_closing_lane(base_app):
    state = base_app.state.cartotheca
    closed_in: list[threading.Thread] = []

    def on_reset(*_args) -> None:
        closed_in.append(threading.current_thread())

    event.listen(state.engine, "reset", on_reset)
    try:
        async def scenario() -> threading.Thread:
            session = state.sessions()
            session.execute(text("SELECT 1"))
            assert session.in_transaction()
            await close_session(_request(base_app), session)
            assert not session.in_transaction()
            return threading.current_thread()

        loop_thread = anyio.run(scenario)
    finally:
        event.remove(state.engine, "reset", on_reset)
    assert closed_in and all(thread is not loop_thread for thread in closed_in), closed_in
    assert state.engine.pool.checkedout() == 0


def test_a_session_holding_no_connection_is_closed_on_the_loop(base_app):
    state = base_app.state.cartotheca
    resets_at_close: list[threading.Thread] = []

    def on_reset(*_args) -> None:
        resets_at_close.append(threading.current_thread())

    async def scenario() -> None:
        session = state.sessions()
        session.execute(text("SELECT 1"))
        session.commit()  # the connection went back with the commit
        event.listen(state.engine, "reset", on_reset)
        await close_session(_request(base_app), session)

    try:
        anyio.run(scenario)
    finally:
        event.remove(state.engine, "reset", on_reset)
    assert resets_at_close == []  # closing sent nothing: no thread, no connection was needed
    assert state.engine.pool.checkedout() == 0
