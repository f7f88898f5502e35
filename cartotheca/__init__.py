"""Cartotheca: a geospatial catalogue and publishing service speaking the GeoNode REST API v2."""

import os as _os
from importlib.util import find_spec as _find_spec

__version__ = "0.1.0"


def _pin_proj_data() -> None:
    # Each geodata wheel bundles its own PROJ; ``import mapnik`` points PROJ_LIB at a directory
    # without proj.db, which breaks rasterio and rio-tiler. rasterio's proj.db (layout 1.6) is
    # read by every bundled PROJ, so it is pinned before any of them is imported.
    if _os.environ.get("PROJ_DATA"):
        _os.environ.setdefault("PROJ_LIB", _os.environ["PROJ_DATA"])
        return
    spec = _find_spec("rasterio")
    if spec is None or not spec.submodule_search_locations:
        return
    proj_data = _os.path.join(list(spec.submodule_search_locations)[0], "proj_data")
    if _os.path.isfile(_os.path.join(proj_data, "proj.db")):
        _os.environ["PROJ_DATA"] = proj_data
        _os.environ["PROJ_LIB"] = proj_data


_pin_proj_data()
