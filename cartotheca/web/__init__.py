"""cartotheca.web: the browser pages (catalogue, resource pages, login) and their static assets.

The pages are thin HTML shells; everything they show comes from the public API, fetched by the
bundled front-end script (built from ``frontend/`` into ``static/``; see ``frontend/build.sh``).
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.staticfiles import StaticFiles

from cartotheca.settings import Settings
from cartotheca.web.pages import STATIC_DIR, STATIC_PREFIX, make_router


def install(app: FastAPI, settings: Settings) -> None:
    """Add the pages' router, mount the static assets and quiet the Basic challenge for scripts."""
    app.include_router(make_router(settings))
    app.mount(STATIC_PREFIX, StaticFiles(directory=STATIC_DIR), name="web-static")
    app.add_middleware(ScriptedRequests)


class ScriptedRequests:
    """A 401 to a page's script (``X-Requested-With: XMLHttpRequest``) without the Basic challenge.

    Browsers answer ``WWW-Authenticate: Basic`` with their own password prompt, even for a
    ``fetch``; the pages handle a 401 themselves (and log in through their form). Other clients
    still get the challenge.
    """

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or (b"x-requested-with", b"XMLHttpRequest") not in scope["headers"]:
            await self.app(scope, receive, send)
            return

        async def quiet(message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                headers = [(k, v) for k, v in message.get("headers", [])
                           if not (k.lower() == b"www-authenticate" and v.lower().startswith(b"basic"))]
                message = dict(message, headers=headers)
            await send(message)

        await self.app(scope, receive, quiet)
