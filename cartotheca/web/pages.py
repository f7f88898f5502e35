"""cartotheca.web.pages: the HTML shells of the browser pages.

Each page is rendered from a Jinja2 template (autoescaped) with only the site's base path, the
asset URLs and static labels; the data is fetched by the front-end script from the public API.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import APIRouter, Request
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.responses import HTMLResponse

from cartotheca import siteurl
from cartotheca.settings import Settings

STATIC_DIR = Path(__file__).parent / "static"
TEMPLATES_DIR = Path(__file__).parent / "templates"
STATIC_PREFIX = "/static/web"

CSP_TEMPLATE = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:{tiles}; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'self'; form-action 'self'"
)


def tile_source(url: str) -> str:
    """The CSP source of an XYZ template's host: ``https://tiles.example.org``, or
    ``https://*.example.org`` when the host's first label is a placeholder (``{s}``, ``{a-c}``)."""
    parts = urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    if "{" in host:
        host = "*." + host.split(".", 1)[1]
    return f"{parts.scheme}://{host}"


def security_headers(settings: Settings) -> dict[str, str]:
    """The pages' own headers: no inline script may run, assets only from this server, and images
    from elsewhere only from the operator's basemap tile host."""
    tiles = f" {tile_source(settings.WEB_BASEMAP_URL)}" if settings.WEB_BASEMAP_URL else ""
    return {
        "Content-Security-Policy": CSP_TEMPLATE.format(tiles=tiles),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }


@lru_cache(maxsize=1)
def _environment() -> Environment:
    return Environment(loader=FileSystemLoader(TEMPLATES_DIR),
                       autoescape=select_autoescape(default=True, default_for_string=True))


@lru_cache(maxsize=1)
def asset_manifest() -> dict[str, Any]:
    """The build's manifest: each asset's content hash (also the cache-busting query)."""
    return json.loads((STATIC_DIR / "manifest.json").read_text())


def base_path(request: Request, settings: Settings) -> str:
    """The path the site is served under, without the trailing slash ("" at the root).

    A reverse proxy that strips a prefix tells it through the ASGI root path (or, trusted,
    ``X-Forwarded-Prefix``); otherwise the path of the site URL the API's own URLs are built from.
    """
    root = request.scope.get("root_path") or siteurl.path(settings)
    return root.rstrip("/")


def asset_url(base: str, name: str) -> str:
    digest = asset_manifest()["files"][name]["sha256"][:12]
    return f"{base}{STATIC_PREFIX}/{name}?v={digest}"


def render(request: Request, settings: Settings, template: str, page: str, title: str,
           **extra: Any) -> HTMLResponse:
    base = base_path(request, settings)
    html = _environment().get_template(template).render(
        base=base, page=page, title=title, **extra,
        script_url=asset_url(base, "app.js"), style_url=asset_url(base, "app.css"),
    )
    return HTMLResponse(html, headers=security_headers(settings))


def map_settings(request: Request, settings: Settings) -> dict[str, str]:
    """What the pages' maps are drawn with: the offline countries, or the operator's tiles."""
    return {"world_url": asset_url(base_path(request, settings), "world-110m.json"),
            "basemap_url": settings.WEB_BASEMAP_URL or "",
            "basemap_attribution": settings.WEB_BASEMAP_ATTRIBUTION}


def make_router(settings: Settings) -> APIRouter:
    """The pages' routes, for the app's ``settings``."""
    router = APIRouter(include_in_schema=False)

    @router.get("/")
    @router.get("/catalogue")
    @router.get("/catalogue/")
    def catalogue(request: Request) -> HTMLResponse:
        # Resource pages live behind the hash (/catalogue/#/dataset/1): the script routes them.
        return render(request, settings, "catalogue.html", "catalogue", "Catalogue",
                      **map_settings(request, settings))

    @router.get("/account/login")
    def login_page(request: Request) -> HTMLResponse:
        return render(request, settings, "login.html", "login", "Log in")

    @router.get("/account/logout")
    def logout_page(request: Request) -> HTMLResponse:
        return render(request, settings, "logout.html", "logout", "Log out")

    @router.get("/upload")
    def upload_page(request: Request) -> HTMLResponse:
        return render(request, settings, "upload.html", "upload", "Upload a dataset or documents")

    @router.get("/account/password/reset")
    def password_reset_page(request: Request) -> HTMLResponse:
        return render(request, settings, "password_reset.html", "password-reset", "Forgotten password")

    @router.get("/account/password/reset/key/{key}")
    def password_reset_key_page(key: str, request: Request) -> HTMLResponse:
        # The script reads the key from the address and checks it with the API.
        return render(request, settings, "password_reset_key.html", "password-reset-key",
                      "Set a new password")

    @router.get("/account/signup")
    def signup_page(request: Request) -> HTMLResponse:
        return render(request, settings, "signup.html", "signup", "Sign up",
                      signup_open=settings.ACCOUNT_OPEN_SIGNUP)

    @router.get("/account/profile")
    def profile_page(request: Request) -> HTMLResponse:
        return render(request, settings, "profile.html", "profile", "Your profile")

    @router.get("/account/applications")
    def applications_page(request: Request) -> HTMLResponse:
        return render(request, settings, "applications.html", "applications", "OAuth2 applications")

    @router.get("/maps/new")
    def map_composer(request: Request) -> HTMLResponse:
        return render(request, settings, "composer.html", "composer", "Compose a map", map_id="",
                      **map_settings(request, settings))

    @router.get("/maps/{map_id}/edit")
    def map_editor(map_id: int, request: Request) -> HTMLResponse:
        return render(request, settings, "composer.html", "composer", "Edit a map", map_id=str(map_id),
                      **map_settings(request, settings))

    @router.get("/monitoring")
    @router.get("/monitoring/")
    def monitoring_dashboard(request: Request) -> HTMLResponse:
        return render(request, settings, "dashboard.html", "dashboard", "Monitoring")

    return router
