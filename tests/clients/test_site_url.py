"""A server started as ``cartotheca serve --port P`` without SITEURL answers with URLs to itself.

Every absolute URL in the capabilities of WMS, WFS, WCS, WMTS and CSW, in CSW records, in the
REST API's records, upload and execution answers, and every asset of the web pages, is collected
and must name the server's own host and port (other hosts only as XML namespaces and schema
locations of the standards); each distinct URL is then fetched from the server. A trusted proxy's
``X-Forwarded-*`` headers move every URL to the proxy; from an address not trusted they are
ignored. The clients that follow those URLs (OWSLib's WMTS, GDAL's WMTS and CSW drivers, the
request sequence QGIS sends) run against the same server.
"""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import urllib.parse
import xml.etree.ElementTree as ET

import httpx
import pytest
from owslib.wms import WebMapService
from owslib.wmts import WebMapTileService

from cartotheca.api.schemas.users import DEFAULT_AVATAR
from tests.factories import make_resource, make_user
from tests.geodata.fixtures import (
    polygons_sld,
    post_upload,
    publish_file,
    wait_execution,
    write_points,
    write_polygons,
)
from tests.ows.raster_fixtures import publish_raster

pytestmark = pytest.mark.clients
TIMEOUT = 120
URL = re.compile(r"https?://[^\s\"'<>\\]+")
# Hosts of the standards' XML namespaces and schemas: identifiers, not links to this server.
STANDARD_HOSTS = {
    "www.opengis.net", "schemas.opengis.net", "www.w3.org", "www.isotc211.org", "purl.org",
    "gcmd.gsfc.nasa.gov", "www.geonode.org", "inspire.ec.europa.eu", "xml.ogc.org",
    "www.loc.gov", "pycsw.org", "datacite.org", "www.interlis.ch", "standards.iso.org",
}
PROXY_HEADERS = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "maps.example.org:8443",
                 "X-Forwarded-Prefix": "/geo"}
PROXY_SITE = "https://maps.example.org:8443/geo/"


@pytest.fixture
def published(db, settings, tmp_path):
    owner = make_user(db, "mapper")
    polygons = publish_file(db, settings, owner, write_polygons(tmp_path), title="Areas",
                            sld=polygons_sld())
    points = publish_file(db, settings, owner, write_points(tmp_path), title="Wells")
    raster = publish_raster(db, settings, owner, tmp_path, "elevation", title="Elevation")
    rivers = make_resource(db, settings, owner, "Rivers", resource_type="map")
    return {"polygons": polygons, "points": points, "raster": raster, "map": rivers}


@pytest.fixture
def http(live_server, admin_auth):
    with httpx.Client(base_url=live_server.url, headers=admin_auth, timeout=60) as client:
        yield client


def _own(live_server) -> str:
    return urllib.parse.urlsplit(live_server.url).netloc


def _urls(text: str) -> set[str]:
    return {html.unescape(u).rstrip(".,;)") for u in URL.findall(text)}


def _documents(http: httpx.Client, published, tmp_path) -> dict[str, str]:
    """name → text of every document whose URLs clients follow."""
    get = {
        "WMS 1.3.0 capabilities (no version)": "ows?SERVICE=WMS&REQUEST=GetCapabilities",
        "WMS 1.1.1 capabilities": "ows?SERVICE=WMS&VERSION=1.1.1&REQUEST=GetCapabilities",
        "WFS 1.0.0 capabilities": "ows?SERVICE=WFS&VERSION=1.0.0&REQUEST=GetCapabilities",
        "WFS 1.1.0 capabilities": "ows?SERVICE=WFS&VERSION=1.1.0&REQUEST=GetCapabilities",
        "WFS 2.0.0 capabilities": "ows?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetCapabilities",
        "WFS 2.0.0 features": "ows?SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&COUNT=2&TYPENAMES="
                              + published["points"].alternate,
        "WCS 2.0.1 capabilities": "ows?SERVICE=WCS&VERSION=2.0.1&REQUEST=GetCapabilities",
        "WMTS capabilities": "ows?SERVICE=WMTS&VERSION=1.0.0&REQUEST=GetCapabilities",
        "CSW capabilities (no version)": "catalogue/csw?SERVICE=CSW&REQUEST=GetCapabilities",
        "CSW 3.0.0 capabilities": "catalogue/csw?SERVICE=CSW&REQUEST=GetCapabilities&ACCEPTVERSIONS=3.0.0",
        "CSW records": "catalogue/csw?SERVICE=CSW&VERSION=2.0.2&REQUEST=GetRecords&typenames=csw:Record"
                       "&resulttype=results&elementsetname=full",
        "CSW ISO records": "catalogue/csw?SERVICE=CSW&VERSION=2.0.2&REQUEST=GetRecords"
                           "&typenames=gmd:MD_Metadata&outputschema=http://www.isotc211.org/2005/gmd"
                           "&resulttype=results&elementsetname=full",
        "API root": "api/v2/",
        "resources": "api/v2/resources?page_size=2",
        "datasets": "api/v2/datasets",
        "dataset": f"api/v2/datasets/{published['polygons'].id}",
        "raster dataset": f"api/v2/datasets/{published['raster'].id}",
        "documents": "api/v2/documents",
        "users": "api/v2/users",
        "catalogue page": "catalogue/",
        "home page": "",
    }
    document = http.post("api/v2/documents", data={"title": "Field notes"},
                         files={"doc_file": ("notes.txt", b"Wells dug in 1921", "text/plain")})
    assert document.status_code == 200, document.text
    texts = {"document upload": document.text}
    for name, path in get.items():
        response = http.get(path)
        assert response.status_code == 200, (name, response.text[:500])
        texts[name] = response.text
    upload = post_upload(http, {}, write_polygons(tmp_path, "uploaded"), layer_title="Uploaded")
    assert upload.status_code == 200, upload.text
    texts["upload answer"] = upload.text
    started = upload.json()
    record = wait_execution(http, {}, started["execution_id"])
    assert record["status"] == "finished", record
    texts["execution request"] = http.get(f"api/v2/executionrequest/{started['execution_id']}").text
    status = http.get(started["status_url"])
    assert status.status_code == 200
    texts["execution status"] = status.text
    uploaded = record["output_params"]["resources"][0]["id"]
    # The upload's thumbnail and links were written by a worker, without a request.
    texts["uploaded dataset"] = http.get(f"api/v2/datasets/{uploaded}").text
    return texts


def _page_assets(text: str) -> set[str]:
    """The paths a web page loads (its links are site-relative)."""
    return {html.unescape(m) for m in re.findall(r'(?:src|href)="(/[^"]*)"', text)}


def test_every_url_the_server_answers_with_reaches_it(live_server, http, published, tmp_path):
    own = _own(live_server)
    texts = _documents(http, published, tmp_path)
    ours: dict[str, str] = {}
    foreign = []
    for name, text in texts.items():
        for url in _urls(text):
            host = urllib.parse.urlsplit(url).netloc
            if host == own:
                ours.setdefault(url, name)
            elif host not in STANDARD_HOSTS:
                foreign.append((name, url))
    assert foreign == [], "\n".join(map(str, foreign))
    # Every document carries URLs of its own (the pages only site-relative ones)
    for name, text in texts.items():
        if name.endswith("page"):
            assert _page_assets(text), name
        else:
            assert any(urllib.parse.urlsplit(u).netloc == own for u in _urls(text)), name
    assert "127.0.0.1:8000" not in "".join(texts.values())
    fetched = {}
    for url in sorted(ours):
        if "{" in url or "%7B" in url:  # tile URL templates
            continue
        fetched[url] = http.get(url.split("#")[0]).status_code
    assert any(url.endswith(f"/{DEFAULT_AVATAR}") for url in fetched)  # users' default picture
    broken = {url: status for url, status in fetched.items() if status >= 500 or status == 404}
    assert broken == {}
    operations = [u for u in fetched if re.search(r"request=(GetMap|GetLegendGraphic|GetRecordById|"
                                                  r"GetFeature|GetCoverage)", u, re.IGNORECASE)]
    assert len(operations) >= 10
    assert {u: fetched[u] for u in operations if fetched[u] != 200} == {}
    for asset in _page_assets(texts["catalogue page"]):
        assert http.get(asset).status_code == 200, asset


def test_serve_says_the_site_url_is_built_from_requests(live_server):
    log = live_server.log.read_text(errors="replace")
    port = urllib.parse.urlsplit(live_server.url).port
    assert f"Serving on http://127.0.0.1:{port}/" in log
    assert "Advertised site URL: built from each request" in log


def _wms_online_resources(text: str) -> set[str]:
    return {node.get("{http://www.w3.org/1999/xlink}href")
            for node in ET.fromstring(text).iter() if node.tag.endswith("OnlineResource")}


def test_a_trusted_proxy_moves_every_url_to_itself(live_server, published):
    # The server trusts loopback's 127.0.0.1 (FORWARDED_ALLOW_IPS' default)
    with httpx.Client(base_url=live_server.url, headers=PROXY_HEADERS, timeout=60) as proxy:
        wms = proxy.get("ows?SERVICE=WMS&REQUEST=GetCapabilities").text
        hrefs = _wms_online_resources(wms)
        assert hrefs and all(h.startswith(PROXY_SITE) for h in hrefs if "opengis" not in h), hrefs
        assert f"{PROXY_SITE}ows" in hrefs
        csw = proxy.get("catalogue/csw?SERVICE=CSW&REQUEST=GetCapabilities").text
        assert f'"{PROXY_SITE}catalogue/csw"' in csw
        root = proxy.get("api/v2/").json()
        assert root["datasets"] == f"{PROXY_SITE}api/v2/datasets"
        dataset = proxy.get(f"api/v2/datasets/{published['polygons'].id}").json()["dataset"]
        assert dataset["thumbnail_url"].startswith(PROXY_SITE)
        assert all(link["url"].startswith(PROXY_SITE) for link in dataset["links"])
        page = proxy.get("catalogue/").text
        assert '"/geo/static/' in page
        assert live_server.url not in wms + csw + str(root) + str(dataset)


def test_forwarded_headers_from_an_untrusted_address_are_ignored(live_server, published):
    # 127.0.0.2 reaches the server over loopback but is not in FORWARDED_ALLOW_IPS
    transport = httpx.HTTPTransport(local_address="127.0.0.2")
    with httpx.Client(base_url=live_server.url, headers=PROXY_HEADERS, transport=transport,
                      timeout=60) as client:
        hrefs = _wms_online_resources(client.get("ows?SERVICE=WMS&REQUEST=GetCapabilities").text)
        assert f"{live_server.url}ows" in hrefs
        assert not any("example.org" in h for h in hrefs)
        assert client.get("api/v2/").json()["datasets"] == f"{live_server.url}api/v2/datasets"


def test_a_host_header_that_is_no_host_is_refused(live_server):
    response = httpx.get(f"{live_server.url}api/v2/", headers={"Host": "evil.example/x?"})
    assert response.status_code == 400


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} (Debian gdal-bin) is not installed")
    return found


def _gdal(*args: str) -> str:
    env = {"GDAL_HTTP_TIMEOUT": "60", "CPL_DEBUG": "OFF", "PATH": "/usr/bin:/bin",
           "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
           "GDAL_ENABLE_WMS_CACHE": "NO"}  # the WMTS driver would cache tiles under the working folder
    result = subprocess.run([_tool(args[0]), *args[1:]], capture_output=True, text=True,
                            timeout=TIMEOUT, env=env)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_gdal_csw_driver_lists_the_records_without_a_version(live_server, published):
    out = _gdal("ogrinfo", "-ro", "-al", "-q", f"CSW:{live_server.url}catalogue/csw")
    assert "Layer name: records" in out
    for resource in published.values():
        assert f"identifier (String) = {resource.uuid}" in out, out


def test_gdal_wmts_driver_reads_tiles(live_server, published, tmp_path):
    source = f"WMTS:{live_server.url}ows?SERVICE=WMTS&REQUEST=GetCapabilities"
    listing = _gdal("gdalinfo", source)
    assert published["polygons"].alternate in listing, listing
    layer = f"{source},layer={published['polygons'].alternate}"
    out = tmp_path / "tile.png"
    _gdal("gdal_translate", "-of", "PNG", "-outsize", "64", "64", "-projwin", "0", "60", "20", "40",
          "-projwin_srs", "EPSG:4326", layer, str(out))
    assert out.stat().st_size > 0


def test_owslib_wmts_reads_capabilities_and_a_tile(live_server, published):
    service = WebMapTileService(f"{live_server.url}ows?SERVICE=WMTS&REQUEST=GetCapabilities",
                                timeout=60)
    layer = published["polygons"].alternate
    assert layer in service.contents
    matrix_set = next(iter(service.contents[layer].tilematrixsetlinks))
    tile = service.gettile(layer=layer, tilematrixset=matrix_set, tilematrix="0", row=0, column=0,
                           format="image/png")
    assert tile.read()[:8] == b"\x89PNG\r\n\x1a\n"


def test_owslib_wms_without_siteurl_follows_the_advertised_urls(live_server, published):
    service = WebMapService(f"{live_server.url}ows", version="1.3.0", timeout=60)
    # WMS writes operation URLs as prefixes a client appends its parameters to ("...ows?")
    urls = {m["url"].rstrip("?") for op in service.operations for m in op.methods}
    assert urls == {f"{live_server.url}ows"}
    image = service.getmap(layers=[published["polygons"].alternate], styles=[""], srs="EPSG:4326",
                           bbox=(0, 40, 20, 60), size=(64, 64), format="image/png")
    assert image.read()[:8] == b"\x89PNG\r\n\x1a\n"


def _advertised(capabilities: str, operation: str) -> str:
    """The GET URL of ``operation`` as a capabilities document advertises it (any version)."""
    root = ET.fromstring(capabilities)
    for node in root.iter():
        if node.tag.split("}")[-1] == operation or node.get("name") == operation:
            for child in node.iter():
                href = child.get("{http://www.w3.org/1999/xlink}href") or child.get("onlineResource")
                if href and child.tag.split("}")[-1] in ("Get", "OnlineResource"):
                    return href
    raise AssertionError(f"{operation} not advertised")


def _join(href: str, params: str) -> str:
    return href + ("&" if "?" in href else "?") + params


def test_the_qgis_request_sequence_follows_the_advertised_urls(live_server, published):
    own = _own(live_server)
    polygons, points = published["polygons"].alternate, published["points"].alternate
    with httpx.Client(timeout=60) as qgis:
        caps = qgis.get(f"{live_server.url}ows?SERVICE=WMS&REQUEST=GetCapabilities")
        assert 'version="1.3.0"' in caps.text
        get_map = _advertised(caps.text, "GetMap")
        assert urllib.parse.urlsplit(get_map).netloc == own
        image = qgis.get(_join(get_map, f"SERVICE=WMS&VERSION=1.3.0&REQUEST=GetMap&LAYERS={polygons}"
                                        "&CRS=EPSG:4326&BBOX=40,0,60,20&WIDTH=257&HEIGHT=204&STYLES="
                                        "&FORMAT=image/png&TRANSPARENT=TRUE&DPI=96&MAP_RESOLUTION=96"
                                        "&FORMAT_OPTIONS=dpi:96"))
        assert image.status_code == 200 and image.headers["content-type"].startswith("image/png")
        info_url = _advertised(caps.text, "GetFeatureInfo")
        info = qgis.get(_join(info_url, f"SERVICE=WMS&VERSION=1.3.0&REQUEST=GetFeatureInfo&LAYERS={polygons}"
                                        f"&QUERY_LAYERS={polygons}&CRS=EPSG:4326&BBOX=40,0,60,20"
                                        "&WIDTH=256&HEIGHT=144&I=64&J=36&STYLES="
                                        "&INFO_FORMAT=application/vnd.ogc.gml&FORMAT=image/png"))
        assert info.status_code == 200, info.text

        wfs = qgis.get(f"{live_server.url}ows?SERVICE=WFS&REQUEST=GetCapabilities"
                       "&ACCEPTVERSIONS=2.0.0,1.1.0,1.0.0")
        assert wfs.status_code == 200
        describe = _advertised(wfs.text, "DescribeFeatureType")
        get_feature = _advertised(wfs.text, "GetFeature")
        assert {urllib.parse.urlsplit(u).netloc for u in (describe, get_feature)} == {own}
        schema = qgis.get(_join(describe, f"SERVICE=WFS&VERSION=2.0.0&REQUEST=DescribeFeatureType"
                                          f"&TYPENAMES={points}&TYPENAME={points}"))
        assert schema.status_code == 200 and "schema" in schema.text
        crs = "urn:ogc:def:crs:EPSG::4326"
        common = f"SERVICE=WFS&VERSION=2.0.0&REQUEST=GetFeature&TYPENAMES={points}&SRSNAME={crs}"
        probe = qgis.get(_join(get_feature, f"{common}&STARTINDEX=0&COUNT=1&BBOX=-90,-180,90,180,{crs}"))
        assert probe.status_code == 200 and probe.text.count(":the_geom") + probe.text.count(":geom") >= 1
        hits = qgis.get(_join(get_feature, f"{common}&RESULTTYPE=hits"))
        matched = int(re.search(r'numberMatched="(\d+)"', hits.text).group(1))
        count_default = re.search(r"CountDefault</ows:Name>\s*<ows:NoValues/>\s*<ows:DefaultValue>(\d+)",
                                  wfs.text)
        page = count_default.group(1) if count_default else "1000"
        everything = qgis.get(_join(get_feature, f"{common}&STARTINDEX=0&COUNT={page}"))
        assert everything.status_code == 200
        assert re.search(r'numberReturned="(\d+)"', everything.text).group(1) == str(matched)
