"""The upload page in Chromium with documents as well as datasets: a PDF and two images become
documents through the documents API (each with its own link), a type or size the API refuses
shows its words, a GeoJSON still becomes a dataset, dropped files go each to its own API, and the
dataset-or-document choice for a file that can be either is honoured, with the mouse and from
the keyboard.

One live server and browser per module and backend.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect
from sqlalchemy import func, select

from cartotheca.db.models import Resource, Upload
from tests.api.routes.document_samples import samples, write_sample
from tests.geodata.fixtures import write_polygons, write_raster
from tests.web.test_account_pages import beyond_width
from tests.web.test_pages import _axe, log_in

pytestmark = pytest.mark.usefixtures("chromium_path")

DONE_MS = 30_000


def _open(page, live_server) -> None:
    """Log in and wait for the form (shown once the page knows who is signed in)."""
    log_in(page, live_server, "upload")
    expect(page.locator("#upload-form")).to_be_visible()


def _send(page, files, title: str = "") -> str:
    """Choose ``files``, give the title, upload and wait for the end; returns data-done."""
    page.get_by_label("Files:").set_input_files([str(f) for f in files])
    page.get_by_label("Title (optional)").fill(title)
    page.get_by_role("button", name="Upload").click()
    return _wait_done(page)


def _wait_done(page) -> str:
    page.wait_for_selector("#upload-status[data-done]:not([aria-busy])", state="attached", timeout=DONE_MS)
    return page.locator("#upload-status").get_attribute("data-done")


def _id_in(href: str, kind: str) -> int:
    fragment = urlsplit(href).fragment
    assert fragment.startswith(f"/{kind}/"), href
    return int(fragment.rsplit("/", 1)[1])


def _document_link(page, title: str) -> int:
    link = page.get_by_role("link", name=f"Open the document {title}")
    return _id_in(link.get_attribute("href"), "document")


def _fate(page, name: str):
    return page.locator("#upload-chosen li", has_text=name).locator(".upload-file-fate")


def test_a_pdf_becomes_a_document_the_page_links_to(live_server, api, new_page, tmp_path):
    pdf = write_sample(tmp_path, "pdf", "field-report")
    page, watch = new_page()
    _open(page, live_server)
    expect(page.get_by_role("heading", level=1)).to_have_text("Upload a dataset or documents")
    page.get_by_label("Files:").set_input_files(str(pdf))
    expect(_fate(page, "field-report.pdf")).to_have_text("— will be added as a document.")
    expect(page.locator("#upload-summary")).to_have_text("Will upload 1 document.")
    assert page.locator("#upload-chosen input[type='radio']").count() == 0  # not ambiguous
    page.get_by_label("Title (optional)").fill("Field report 2026")
    page.get_by_role("button", name="Upload").click()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The document is ready.")
    assert page.locator("#transfer-progress").evaluate("p => p.value") == 100
    assert page.get_by_label("Transfer of field-report.pdf").evaluate("p => p.value") == 100
    expect(page.locator("#upload-result")).to_be_hidden()  # the dataset link

    pk = _document_link(page, "Field report 2026")
    record = api.ok("GET", f"api/v2/documents/{pk}")["document"]
    assert record["title"] == "Field report 2026" and record["extension"] == "pdf"
    assert api.request("GET", f"documents/{pk}/download").content == pdf.read_bytes()
    page.get_by_role("link", name="Open the document Field report 2026").click()
    expect(page.locator("#resource-title")).to_have_text("Field report 2026")
    assert watch.clean, watch


def test_two_images_become_two_documents_one_after_another(live_server, api, new_page, tmp_path):
    north = write_sample(tmp_path, "png", "north")
    south = write_sample(tmp_path, "jpg", "south")
    page, watch = new_page()
    _open(page, live_server)
    page.get_by_label("Files:").set_input_files([str(north), str(south)])
    expect(page.locator("#upload-summary")).to_have_text("Will upload 2 documents.")
    assert _send(page, [north, south], "Shore photos") == "finished", \
        page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The 2 documents are ready.")
    found = {}
    for name in ("north.png", "south.jpg"):
        assert page.get_by_label(f"Transfer of {name}").evaluate("p => p.value") == 100
        pk = _document_link(page, f"Shore photos ({name})")
        found[name] = api.ok("GET", f"api/v2/documents/{pk}")["document"]
    assert found["north.png"]["pk"] != found["south.jpg"]["pk"]
    assert found["north.png"]["extension"] == "png" and found["south.jpg"]["extension"] == "jpg"
    assert found["north.png"]["title"] == "Shore photos (north.png)"
    assert api.request("GET", f"documents/{found['south.jpg']['pk']}/download").content == samples()["jpg"]
    assert watch.clean, watch


def test_refused_type_and_size_show_the_apis_words(live_server, api, new_page, tmp_path):
    drawing = tmp_path / "sketch.svg"
    drawing.write_text('<svg xmlns="http://www.w3.org/2000/svg"/>')
    page, _ = new_page()
    _open(page, live_server)
    before = api.ok("GET", "api/v2/documents?page_size=1")["total"]
    page.get_by_label("Files:").set_input_files(str(drawing))
    expect(_fate(page, "sketch.svg")).to_have_text("— will be added as a document.")
    page.get_by_role("button", name="Upload").click()
    assert _wait_done(page) == "failed"
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("The file provided is not in the supported extensions list.")
    expect(alert).to_contain_text("Allowed: ")
    assert page.locator("#upload-chosen a").count() == 0

    # Staff lower the document size limit: the API's own refusal, in words, for a larger file.
    notes = tmp_path / "notes.txt"
    notes.write_text("station readings\n" * 200)
    limit = api.ok("GET", "api/v2/upload-size-limits/document_upload_size")["upload-size-limit"]["max_size"]
    api.ok("POST", "api/v2/upload-size-limits", json={"slug": "document_upload_size", "max_size": 1024})
    try:
        assert _send(page, [notes]) == "failed"
        expect(alert).to_contain_text("The file exceeds the maximum document size")
    finally:
        api.ok("POST", "api/v2/upload-size-limits", json={"slug": "document_upload_size", "max_size": limit})
    assert api.ok("GET", "api/v2/documents?page_size=1")["total"] == before

    # Within the limit again, the same file goes through and the alert is gone.
    assert _send(page, [notes]) == "finished"
    expect(alert).to_be_hidden()
    record = api.ok("GET", f"api/v2/documents/{_document_link(page, 'notes')}")["document"]
    assert record["extension"] == "txt"


def test_a_geojson_still_becomes_a_dataset(live_server, api, new_page, tmp_path):
    squares = write_polygons(tmp_path, "squares", driver="GeoJSON")
    other = write_polygons(tmp_path, "others", driver="GPKG")
    page, watch = new_page()
    _open(page, live_server)
    # Two datasets at once are two uploads (sent one after another: see the test below).
    page.get_by_label("Files:").set_input_files([str(squares), str(other)])
    expect(page.locator("#upload-summary")).to_have_text("Will upload 2 datasets.")
    expect(_fate(page, "others.gpkg")).to_have_text("— will be published as a dataset.")
    expect(page.locator("#upload-status")).to_be_hidden()

    page.get_by_label("Files:").set_input_files(str(squares))
    expect(_fate(page, "squares.geojson")).to_have_text("— will be published as a dataset.")
    expect(page.locator("#upload-summary")).to_have_text("Will upload 1 dataset.")
    assert _send(page, [squares], "Squares from the page") == "finished", \
        page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The dataset is ready.")
    assert page.locator("#import-progress").evaluate("p => p.value") == 100
    pk = _id_in(page.get_by_role("link", name="Open the dataset").get_attribute("href"), "dataset")
    dataset = api.ok("GET", f"api/v2/datasets/{pk}")["dataset"]
    assert dataset["title"] == "Squares from the page" and dataset["resource_type"] == "dataset"
    assert watch.clean, watch


def test_dropped_dataset_and_document_go_to_their_own_apis(live_server, api, new_page, tmp_path):
    squares = write_polygons(tmp_path, "plots", driver="GeoJSON")
    page, watch = new_page()
    _open(page, live_server)
    # What a drop from the desktop hands the page: a DataTransfer holding the files.
    dropped = page.evaluate_handle(
        """([geojson, text]) => {
            const data = new DataTransfer();
            data.items.add(new File([geojson], 'plots.geojson', { type: 'application/geo+json' }));
            data.items.add(new File([text], 'readme.txt', { type: 'text/plain' }));
            return data;
        }""", [squares.read_text(), "How the plots were surveyed.\n"])
    page.dispatch_event("#drop-zone", "drop", {"dataTransfer": dropped})
    expect(page.locator("#upload-chosen li")).to_have_count(2)
    expect(_fate(page, "plots.geojson")).to_have_text("— will be published as a dataset.")
    expect(_fate(page, "readme.txt")).to_have_text("— will be added as a document.")
    expect(page.locator("#upload-summary")).to_have_text("Will upload 1 dataset and 1 document.")
    page.get_by_label("Title (optional)").fill("Plots")
    page.get_by_role("button", name="Upload").click()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The dataset and the document are ready.")
    pk = _id_in(page.get_by_role("link", name="Open the dataset").get_attribute("href"), "dataset")
    assert api.ok("GET", f"api/v2/datasets/{pk}")["dataset"]["title"] == "Plots (plots.geojson)"
    record = api.ok("GET", f"api/v2/documents/{_document_link(page, 'Plots (readme.txt)')}")["document"]
    assert record["extension"] == "txt"
    assert watch.clean, watch


def _zipped_shapefile(tmp_path: Path, name: str) -> Path:
    shapefile = write_polygons(tmp_path / name, name, driver="ESRI Shapefile")
    archive = tmp_path / f"{name}.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for part in shapefile.parent.glob(f"{name}.*"):
            out.write(part, part.name)
    return archive


def _big_geojson(path: Path, count: int = 40_000) -> Path:
    features = [{"type": "Feature", "properties": {"n": n, "note": f"point number {n}"},
                 "geometry": {"type": "Point", "coordinates": [n % 360 - 180, (n // 360) % 180 - 90]}}
                for n in range(count)]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


def _stored_files(data_dir: Path) -> set[str]:
    # The catalogue's own database files change with every request; everything else is data.
    return {str(p.relative_to(data_dir)) for p in data_dir.rglob("*")
            if p.is_file() and not p.name.startswith("cartotheca.sqlite3")}


def _row_text(page, name: str):
    return page.locator("#upload-chosen li", has_text=name).locator(".upload-file-progress")


def test_several_datasets_go_one_after_another_and_a_cancel_leaves_nothing(
        live_server, api, new_page, tmp_path, module_db, data_dir):
    archive = _zipped_shapefile(tmp_path, "plots")
    relief = write_raster(tmp_path, "relief")
    squares = write_polygons(tmp_path, "fields", driver="GeoJSON")
    page, watch = new_page(bypass_csp=True)  # for axe
    page.set_viewport_size({"width": 390, "height": 844})
    _open(page, live_server)
    page.get_by_label("Files:").set_input_files([str(archive), str(relief), str(squares)])
    expect(page.locator("#upload-summary")).to_have_text("Will upload 3 datasets.")
    page.get_by_role("button", name="Upload").click()
    # The progress is below the fold on a phone: it is scrolled to and focused.
    expect(page.locator("#upload-status-heading")).to_be_focused()
    expect(page.locator("#upload-status-heading")).to_be_in_viewport()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The 3 datasets are ready.")
    expect(page.locator("#upload-message")).to_be_focused()
    expect(page.locator("#my-uploads")).to_have_attribute("data-ready", "true")
    assert beyond_width(page, 390) == []
    assert _axe(page) == []  # with the rows' results and "My uploads"
    made = {}
    for name in ("plots.zip", "relief.tif", "fields.geojson"):
        assert page.get_by_label(f"Transfer of {name}").evaluate("p => p.value") == 100
        link = page.get_by_role("link", name=f"Go to the dataset {name}")
        pk = _id_in(link.get_attribute("href"), "dataset")
        made[name] = api.ok("GET", f"api/v2/datasets/{pk}")["dataset"]
    assert {d["subtype"] for d in made.values()} == {"vector", "raster"}
    assert len({d["pk"] for d in made.values()}) == 3
    mine = page.locator("#my-uploads-list li")
    for name in ("plots", "relief", "fields"):
        expect(mine.filter(has_text=name).first).to_contain_text("published")
    assert watch.clean, watch

    # Two more, on a slow line: one cancelled while it is sent, one while it is imported.
    module_db.expire_all()
    resources = module_db.scalar(select(func.count()).select_from(Resource))
    records = module_db.scalar(select(func.count()).select_from(Upload))
    files = _stored_files(data_dir)
    big = _big_geojson(tmp_path / "heavy.geojson")
    quick = write_polygons(tmp_path, "quick", driver="GeoJSON")
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 1500,
                                                  "downloadThroughput": -1, "uploadThroughput": 200_000})
    page.get_by_label("Files:").set_input_files([str(big), str(quick)])
    page.get_by_role("button", name="Upload").click()
    expect(page.locator("#upload-message")).to_contain_text("Sending heavy.geojson")
    page.get_by_role("button", name="Cancel the upload of heavy.geojson").click()
    expect(page.locator("#upload-message")).to_contain_text("quick.geojson received")
    page.get_by_role("button", name="Cancel the upload of quick.geojson").click()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    cdp.send("Network.emulateNetworkConditions", {"offline": False, "latency": 0,
                                                  "downloadThroughput": -1, "uploadThroughput": -1})
    expect(page.locator("#upload-message")).to_have_text("2 uploads were cancelled.")
    for name in ("heavy.geojson", "quick.geojson"):
        expect(_row_text(page, name)).to_contain_text("Cancelled: nothing was kept.")
    module_db.expire_all()
    assert module_db.scalar(select(func.count()).select_from(Resource)) == resources
    assert module_db.scalar(select(func.count()).select_from(Upload)) == records
    assert _stored_files(data_dir) == files


def test_the_choice_for_a_zip_is_honoured_both_ways(live_server, api, new_page, tmp_path):
    shapefile = write_polygons(tmp_path, "parcels", driver="ESRI Shapefile")
    archive = tmp_path / "parcels.zip"
    with zipfile.ZipFile(archive, "w") as out:
        for part in shapefile.parent.glob("parcels.*"):
            if part != archive:
                out.write(part, part.name)
    page, watch = new_page(bypass_csp=True)  # for axe
    _open(page, live_server)
    page.get_by_label("Files:").set_input_files(str(archive))
    dataset_choice = page.get_by_role("radio", name="a dataset")
    document_choice = page.get_by_role("radio", name="a document")
    expect(page.get_by_role("group", name="Upload parcels.zip as")).to_be_visible()
    expect(dataset_choice).to_be_checked()  # a zip is proposed as a dataset
    expect(_fate(page, "parcels.zip")).to_have_text("— will be published as a dataset.")
    assert _axe(page) == []

    # Left as a dataset: the zipped shapefile is imported.
    page.get_by_role("button", name="Upload").click()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    expect(page.locator("#upload-message")).to_have_text("The dataset is ready.")
    pk = _id_in(page.get_by_role("link", name="Open the dataset").get_attribute("href"), "dataset")
    assert api.ok("GET", f"api/v2/datasets/{pk}")["dataset"]["title"] == "parcels"

    # Chosen as a document: the same archive is stored as it is.
    page.get_by_label("Files:").set_input_files(str(archive))
    document_choice.check()
    expect(_fate(page, "parcels.zip")).to_have_text("— will be added as a document.")
    expect(page.locator("#upload-summary")).to_have_text("Will upload 1 document.")
    page.get_by_label("Title (optional)").fill("Parcels archive")
    page.get_by_role("button", name="Upload").click()
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    record = api.ok("GET", f"api/v2/documents/{_document_link(page, 'Parcels archive')}")["document"]
    assert record["extension"] == "zip" and record["resource_type"] == "document"
    assert api.request("GET", f"documents/{record['pk']}/download").content == archive.read_bytes()
    assert _axe(page) == []
    assert watch.clean, watch


def test_the_kind_is_chosen_and_the_upload_sent_from_the_keyboard(live_server, api, new_page, tmp_path):
    tiff = write_sample(tmp_path, "tif", "scan")
    page, watch = new_page()
    _open(page, live_server)
    page.get_by_label("Files:").set_input_files(str(tiff))
    expect(_fate(page, "scan.tif")).to_have_text("— will be published as a dataset.")
    page.get_by_label("Files:").focus()
    page.keyboard.press("Tab")
    expect(page.get_by_role("radio", name="a dataset")).to_be_focused()  # the checked one
    page.keyboard.press("ArrowDown")
    expect(page.get_by_role("radio", name="a document")).to_be_checked()
    expect(page.get_by_role("radio", name="a document")).to_be_focused()
    expect(_fate(page, "scan.tif")).to_have_text("— will be added as a document.")
    page.keyboard.press("Tab")
    expect(page.get_by_label("Title (optional)")).to_be_focused()
    page.keyboard.type("Scanned sheet")
    page.keyboard.press("Tab")
    expect(page.get_by_role("button", name="Upload")).to_be_focused()
    page.keyboard.press("Enter")
    assert _wait_done(page) == "finished", page.locator("#upload-error").inner_text()
    link = page.get_by_role("link", name="Open the document Scanned sheet")
    link.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#resource-title")).to_have_text("Scanned sheet")
    pk = _id_in(page.url, "document")
    assert api.ok("GET", f"api/v2/documents/{pk}")["document"]["extension"] == "tif"
    assert watch.clean, watch
