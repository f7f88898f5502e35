"""The committed front-end bundle, its manifest and the HTML shells (no browser, no npm)."""

from __future__ import annotations

import fnmatch
import hashlib
import json
import tomllib
from pathlib import Path

from fastapi.testclient import TestClient

from cartotheca.web.pages import STATIC_DIR, STATIC_PREFIX, TEMPLATES_DIR, _environment

ROOT = Path(__file__).resolve().parents[2]
FRONTEND = ROOT / "frontend"
MANIFEST = json.loads((STATIC_DIR / "manifest.json").read_text())


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_manifest_records_the_hash_of_every_committed_asset():
    on_disk = {p.name for p in STATIC_DIR.iterdir() if p.name != "manifest.json"}
    assert on_disk == set(MANIFEST["files"]) and {"app.js", "app.css"} <= on_disk
    for name, entry in MANIFEST["files"].items():
        path = STATIC_DIR / name
        assert _sha256(path) == entry["sha256"], f"{name} differs from the build: run frontend/build.sh"
        assert path.stat().st_size == entry["bytes"]


def test_bundle_was_built_from_the_current_sources_and_lock_file():
    """The manifest's source digest, recomputed the way build.mjs does: an edit to the sources
    or the lock file without a rebuild fails here."""
    sources = MANIFEST["sources"]
    expected = ["package-lock.json", "build.mjs"] + sorted(
        f"src/{p.name}" for p in (FRONTEND / "src").iterdir())
    assert sources["files"] == expected
    digest = hashlib.sha256()
    for name in expected:
        digest.update(f"{name}\0".encode())
        digest.update((FRONTEND / name).read_bytes())
        digest.update(b"\0")
    assert digest.hexdigest() == sources["sha256"], "frontend sources changed: run frontend/build.sh"


def test_npm_packages_are_pinned_exactly_and_match_the_lock_file():
    package = json.loads((FRONTEND / "package.json").read_text())
    lock = json.loads((FRONTEND / "package-lock.json").read_text())
    wanted = {**package["dependencies"], **package["devDependencies"]}
    assert {"ol", "esbuild", "axe-core"} <= set(wanted)
    for name, version in wanted.items():
        assert version[0].isdigit(), f"{name} is not pinned to an exact version: {version}"
        assert lock["packages"][f"node_modules/{name}"]["version"] == version
        assert MANIFEST["packages"].get(name, version) == version


def test_bundle_fetches_nothing_from_other_hosts():
    script = (STATIC_DIR / "app.js").read_text()
    style = (STATIC_DIR / "app.css").read_text()
    for text in (script, style):
        assert "cdn." not in text and "unpkg" not in text and "jsdelivr" not in text
    assert "@import" not in style


def test_axe_core_is_vendored_for_the_browser_tests():
    axe = Path(__file__).parent / "vendor" / "axe.min.js"
    lock = json.loads((FRONTEND / "package-lock.json").read_text())
    version = lock["packages"]["node_modules/axe-core"]["version"]
    assert f"axe v{version}" in axe.read_text()[:300]


def test_wheel_package_data_covers_the_templates_and_assets():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["cartotheca"]
    package = ROOT / "cartotheca"
    shipped = [*STATIC_DIR.iterdir(), *TEMPLATES_DIR.iterdir()]
    for path in shipped:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, p) for p in patterns), f"{relative} not in package-data"


def test_pages_link_assets_under_the_site_base_path(make_app):
    app = make_app(SITEURL="https://maps.example.org/geo/")
    with TestClient(app) as client:
        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        digest = MANIFEST["files"]["app.js"]["sha256"][:12]
        assert f'src="/geo{STATIC_PREFIX}/app.js?v={digest}"' in page.text
        assert 'data-base="/geo"' in page.text and 'href="/geo/account/login"' in page.text
        asset = client.get(f"{STATIC_PREFIX}/app.js")
        assert asset.status_code == 200 and asset.content == (STATIC_DIR / "app.js").read_bytes()
        for path in ("/catalogue/", "/catalogue", "/account/login", "/account/logout"):
            assert client.get(path).status_code == 200, path
    # A proxy that strips its prefix says so with the ASGI root path, which wins over SITEURL.
    with TestClient(app, root_path="/proxied") as client:
        page = client.get("/")
        assert 'data-base="/proxied"' in page.text and f"/proxied{STATIC_PREFIX}/app.css" in page.text


def test_templates_escape_what_they_are_given():
    html = _environment().get_template("login.html").render(
        base='"><script>alert(1)</script>', page="login", title="<b>x</b>",
        script_url="/s.js", style_url="/s.css")
    assert "<script>alert(1)</script>" not in html and "<b>x</b>" not in html
    assert "&lt;script&gt;" in html


def test_pages_scripts_get_no_basic_challenge_other_clients_do(make_app):
    with TestClient(make_app()) as client:
        plain = client.get("/api/v2/executionrequest")
        assert plain.status_code == 401 and plain.headers["www-authenticate"].startswith("Basic")
        scripted = client.get("/api/v2/executionrequest", headers={"X-Requested-With": "XMLHttpRequest"})
        assert scripted.status_code == 401 and "www-authenticate" not in scripted.headers
        assert scripted.json() == plain.json()
        # Other statuses and other challenges pass through untouched.
        userinfo = client.get("/o/userinfo", headers={"X-Requested-With": "XMLHttpRequest"})
        assert userinfo.status_code == 401 and userinfo.headers["www-authenticate"].startswith("Bearer")
