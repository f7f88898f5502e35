"""cartotheca.settings: one typed settings object, every spec setting under its spec name.

Each setting is read from ``CARTOTHECA_<NAME>`` in the environment, or from the settings file
named by ``CARTOTHECA_SETTINGS_FILE`` (``NAME=value`` lines, dotenv style). List values are JSON.
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pyproj  # only to validate; loaded by the map server anyway
from pydantic import AliasChoices, Field, PrivateAttr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from cartotheca import json_schema

DEFAULT_AUTH_EXEMPT_URLS = [
    r"^/o/.*",
    r"^/account/.*",
    r"^/static/.*",
    r"^/api/o/.*",
    r"^/api/roles",
    r"^/api/adminRole",
    r"^/api/users",
    r"^/api/datasets",
    r"^/monitoring",
    r"^/i18n/setlang/",
]

DEFAULT_DOCUMENT_TYPES = [
    "doc", "docx", "xls", "xlsx", "pdf", "zip", "jpg", "jpeg", "tif", "tiff", "png", "gif", "txt",
]

# GeoNode's default extra metadata item: four free values and an optional integer id.
DEFAULT_EXTRA_METADATA_ITEM: dict[str, Any] = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "filter_header": {}, "field_name": {},
                   "field_label": {}, "field_value": {}},
    "required": ["filter_header", "field_name", "field_label", "field_value"],
    "additionalProperties": False,
}


def _standard(name: str) -> AliasChoices:
    """A setting read as ``CARTOTHECA_<NAME>`` or under the name other tools know it by."""
    return AliasChoices(f"CARTOTHECA_{name}", name)


class Settings(BaseSettings):
    """Every knob of the service. Spec settings keep the spec's names and defaults."""

    model_config = SettingsConfigDict(
        env_prefix="CARTOTHECA_",
        env_file=os.environ.get("CARTOTHECA_SETTINGS_FILE") or None,
        extra="ignore",
        case_sensitive=True,
        populate_by_name=True,
    )
    # The file store built from these settings (cartotheca.filestore.stores.file_store): one
    # client per settings object, made by the first caller, normally a composition root.
    _file_store: Any = PrivateAttr(default=None)
    _raster_store: Any = PrivateAttr(default=None)

    # Storage and database
    DATA_DIR: Path = Path("./cartotheca-data")
    DATABASE_URL: str | None = None  # default: sqlite file under DATA_DIR
    # Catalogue connections per server process (README "Database connections"); None: the
    # backend's default (PostgreSQL 10 + 20, SQLite 8 + no limit).
    DATABASE_POOL_SIZE: int | None = None
    DATABASE_MAX_OVERFLOW: int | None = None
    DATABASE_POOL_TIMEOUT: float = 3.0  # seconds a request waits for a connection, then 503
    THREAD_POOL_SIZE: int = 24  # threads running synchronous request work, per process
    # Seconds between handing the allocator's free pages back to the system (0: never)
    MEMORY_RELEASE_INTERVAL: float = 10.0
    # Heavy map-server requests (OWS, CSW, tiles) running at once per process (None: one per CPU
    # the process may use), how many more may wait for a turn, and for how long, before a 503
    # (cartotheca.api.bulkhead); the other request threads stay free for the catalogue API.
    OWS_CONCURRENCY: int | None = Field(default=None, ge=1)
    OWS_QUEUE: int = Field(default=512, ge=0)
    OWS_QUEUE_SECONDS: float = Field(default=30.0, ge=0)
    # The public URL of the site. Unset: every absolute URL is built from the request (README
    # "Site URL"); the default below is then only used by work done without a request.
    SITEURL: str = "http://127.0.0.1:8000/"
    # Addresses (IPs, CIDR blocks, "*") of reverse proxies whose X-Forwarded-* headers are believed
    FORWARDED_ALLOW_IPS: list[str] = Field(default_factory=lambda: ["127.0.0.1", "::1"])
    SECRET_KEY: str | None = None  # default: generated once and kept under DATA_DIR

    # First administrator (created on first start when no superuser exists)
    ADMIN_USER: str = "admin"
    ADMIN_PASSWORD: str | None = None
    ADMIN_EMAIL: str = "admin@localhost"

    # Paging (spec §8 and compat section 0)
    API_LIMIT_PER_PAGE: int = 20
    DEFAULT_SEARCH_SIZE: int = 10
    API_MAX_PAGE_SIZE: int = 1000

    # Publishing and accounts (spec §3.3, §5, §8)
    RESOURCE_PUBLISHING: bool = True
    ADMIN_MODERATE_UPLOADS: bool = False
    ACCOUNT_OPEN_SIGNUP: bool = True
    ACCOUNT_APPROVAL_REQUIRED: bool = False
    ACCOUNT_EMAIL_REQUIRED: bool = False
    LOCKDOWN_GEONODE: bool = False
    AUTH_EXEMPT_URLS: list[str] = Field(default_factory=lambda: list(DEFAULT_AUTH_EXEMPT_URLS))
    REGISTERED_MEMBERS_GROUP_NAME: str = "registered-members"
    ANONYMOUS_GROUP_NAME: str = "anonymous"
    USER_DELETION_RULES: list[str] = Field(
        default_factory=lambda: ["cartotheca.catalogue.accounts.rule_user_owns_no_resources"]
    )
    DEFAULT_ANONYMOUS_VIEW_PERMISSION: bool = True
    DEFAULT_ANONYMOUS_DOWNLOAD_PERMISSION: bool = True
    ACCESS_TOKEN_EXPIRE_SECONDS: int = 36000
    # Argon2id cost of new password hashes (argon2-cffi's RFC 9106 defaults)
    PASSWORD_HASH_TIME_COST: int = 3
    PASSWORD_HASH_MEMORY_KIB: int = 65536
    PASSWORD_HASH_PARALLELISM: int = 4
    # Password checks running at once per process (each holds PASSWORD_HASH_MEMORY_KIB), how
    # many requests may wait for one, and how long, before a 503 with Retry-After
    PASSWORD_CHECK_CONCURRENCY: int = Field(default=1, ge=1)
    PASSWORD_CHECK_QUEUE: int = Field(default=16, ge=1)
    PASSWORD_CHECK_WAIT_SECONDS: float = Field(default=2.0, gt=0)
    # Failed logins (django-axes' settings, GeoNode's defaults): after AXES_FAILURE_LIMIT
    # failures per lockout parameter, 429 until AXES_COOLOFF_TIME hours after the last one
    AXES_ENABLED: bool = True
    AXES_FAILURE_LIMIT: int = Field(default=3, ge=1)
    AXES_COOLOFF_TIME: float = Field(default=2.0, gt=0)
    AXES_LOCKOUT_PARAMETERS: list[str | list[str]] = Field(
        default_factory=lambda: ["ip_address", "username"])
    SESSION_COOKIE_AGE: int = 1209600
    # Seconds an e-mailed password reset link stays usable (Django's name and default, 3 days)
    PASSWORD_RESET_TIMEOUT: int = Field(default=259200, ge=60)

    # Bulk updates (spec §4.1)
    ENABLE_BULK_UPDATE: bool = False
    ENABLE_PATCH_ALL: bool = False

    # Documents, proxy, map server (spec §8)
    ALLOWED_DOCUMENT_TYPES: list[str] = Field(default_factory=lambda: list(DEFAULT_DOCUMENT_TYPES))
    MAX_DOCUMENT_SIZE: int = 2
    TIMEOUT: int = 10
    PROXY_ALLOWED_HOSTS: list[str] = Field(default_factory=list)
    PROXY_URL: str = "/proxy/?url="

    # Documents, geoapps, extra metadata and the web map client's resources
    MAX_GEOAPP_DATA_SIZE: int = 10485760  # bytes of a geoapp's (or map client resource's) JSON data
    # Resource type (dataset, document, map, geoapp; geostory and dashboard fall back to geoapp)
    # → JSON Schema every extra metadata item of that type must satisfy (GeoNode's setting name).
    EXTRA_METADATA_SCHEMA: dict[str, dict[str, Any]] = Field(
        default_factory=lambda: {kind: dict(DEFAULT_EXTRA_METADATA_ITEM)
                                 for kind in ("dataset", "document", "map", "geoapp")}
    )

    # Datasets: storage, uploads and the built-in map server
    # "geopackage" (embedded: one GeoPackage per vector dataset under DATA_DIR) or
    # "postgis" (scale-out: tables in the DATASTORE_URL database). Rasters are COGs either way.
    STORAGE_BACKEND: str = "geopackage"
    DATASTORE_URL: str | None = None  # PostGIS database for vector data (postgis backend)
    # COG directory when there is no OBJECT_STORE_URL (then COGs are objects in the bucket);
    # default DATA_DIR/rasters
    RASTER_DIR: Path | None = None
    # Staged uploads, written by the server that receives them and read by the process that
    # imports them: a folder servers and Celery workers share when they run on several machines.
    UPLOAD_DIR: Path | None = None  # default DATA_DIR/uploads
    # Documents, thumbnails and rasters in an S3-compatible bucket instead of DATA_DIR (README "Object
    # storage"): s3://bucket/prefix, the server's URL when it is not AWS, and the credentials
    # (also read under their standard AWS_* names; unset: boto3's own lookup).
    OBJECT_STORE_URL: str | None = None
    S3_ENDPOINT_URL: str | None = None
    AWS_ACCESS_KEY_ID: str | None = Field(default=None, validation_alias=_standard("AWS_ACCESS_KEY_ID"))
    AWS_SECRET_ACCESS_KEY: str | None = Field(default=None,
                                              validation_alias=_standard("AWS_SECRET_ACCESS_KEY"))
    AWS_REGION: str | None = Field(default=None, validation_alias=_standard("AWS_REGION"))
    DEFAULT_WORKSPACE: str = "geonode"
    DEFAULT_MAX_UPLOAD_SIZE: int = 104857600  # bytes, one upload (all its parts)
    MAX_UNZIPPED_SIZE: int = 1073741824  # bytes, everything an archive may expand to
    MAX_UNZIP_RATIO: int = 200  # expanded/compressed ratio beyond which an archive is a bomb
    MAX_ARCHIVE_MEMBERS: int = 1000
    WFS_COUNT_DEFAULT: int = 10000  # advertised CountDefault; the page size of a GetFeature
    OWS_MAX_IMAGE_SIZE: int = 4096  # largest GetMap/GetLegendGraphic width or height
    THUMBNAIL_SIZE: list[int] = Field(default_factory=lambda: [500, 200])
    # Layers with more features than this get their thumbnail from an execution of its own, started
    # right after the upload's import commits, so publishing a large layer does not wait for it.
    THUMBNAIL_INLINE_MAX_FEATURES: int = 5000

    # Tiles and coverages (XYZ, WMTS, WCS)
    TILE_MAX_AGE: int = 300  # seconds browsers may reuse a tile before revalidating its ETag
    WCS_MAX_PIXELS: int = 400_000_000  # largest GetCoverage output, width x height x bands

    # The web pages' maps: an XYZ tile service drawn under the data instead of the offline
    # countries ("https://tile.example.org/{z}/{x}/{y}.png"), and the credit its terms ask for.
    WEB_BASEMAP_URL: str | None = None
    WEB_BASEMAP_ATTRIBUTION: str = ""

    # Catalogue metadata (CSW at /catalogue/csw)
    CSW_MAX_RECORDS: int = 100  # records of a GetRecords answer when the client asks none or more

    # What every OGC service (WMS, WFS, WCS, WMTS, CSW) says about itself in its capabilities;
    # GeoNode keeps these in PYCSW['CONFIGURATION']['metadata:main']. None: each service's own.
    OWS_SERVICE_TITLE: str | None = None
    OWS_SERVICE_ABSTRACT: str | None = None
    OWS_SERVICE_KEYWORDS: list[str] | None = None
    OWS_SERVICE_FEES: str = "NONE"
    OWS_SERVICE_ACCESS_CONSTRAINTS: str = "NONE"
    OWS_CONTACT_ORGANIZATION: str = "Cartotheca"  # the service provider's name
    OWS_CONTACT_URL: str | None = None  # default: SITEURL
    OWS_CONTACT_NAME: str | None = None  # default: ADMIN_USER
    OWS_CONTACT_POSITION: str = ""
    OWS_CONTACT_EMAIL: str | None = None  # default: ADMIN_EMAIL
    OWS_CONTACT_PHONE: str = ""
    OWS_CONTACT_FAX: str = ""
    OWS_CONTACT_ADDRESS: str = ""
    OWS_CONTACT_CITY: str = ""
    OWS_CONTACT_STATE_OR_PROVINCE: str = ""
    OWS_CONTACT_POSTAL_CODE: str = ""
    OWS_CONTACT_COUNTRY: str = ""
    # CRSs WMS capabilities list (and WFS as other CRSs); GetMap takes any EPSG code anyway.
    WMS_ADVERTISED_CRS: list[str] = Field(
        default_factory=lambda: ["EPSG:4326", "EPSG:3857", "EPSG:4258", "EPSG:3035", "EPSG:3395"])

    # Harvesters: remote GeoNode, WMS and CSW services copied into the catalogue
    # CIDR blocks (JSON list) harvesters may reach although they are loopback, private or
    # link-local; empty: only public addresses. Hosts must also be in PROXY_ALLOWED_HOSTS.
    HARVESTER_ALLOWED_PRIVATE_NETWORKS: list[str] = Field(default_factory=list)
    HARVESTER_MAX_RESPONSE_BYTES: int = 20971520  # largest answer read from a remote service
    HARVESTER_PAGE_SIZE: int = 100  # records asked for per request to a remote catalogue
    HARVESTER_MAX_RECORDS: int = 10000  # records listed from one remote at most
    HARVESTING_SCHEDULER_INTERVAL: float = 60.0  # seconds between looks for due scheduled runs

    # Events (spec §6)
    CHAT_ENABLED: bool = False
    CHAT_WEBHOOK_URLS: list[str] = Field(default_factory=list)
    PINAX_NOTIFICATIONS_BACKENDS: list[str] = Field(default_factory=lambda: ["email"])
    PINAX_NOTIFICATIONS_QUEUE_ALL: bool = False
    NOTIFICATIONS_MAX_ATTEMPTS: int = 5  # tries of one delivery before it is given up
    NOTIFICATIONS_RETRY_BASE_SECONDS: float = 30.0  # first retry delay; doubles on each try
    NOTIFICATIONS_POLL_SECONDS: float = 30.0  # how often the delivery thread looks for due retries

    # The in-process catalogue index: exact totals and facet counts from bitmaps, kept in step
    # with the database by the resource change feed (catalogue/index/)
    # (README's settings table says what each does).
    CATALOGUE_INDEX_ENABLED: bool = True
    CATALOGUE_INDEX_MAX_PENDING: int = Field(default=10000, ge=0)
    CATALOGUE_INDEX_MAX_IDS: int = Field(default=100000, ge=0)
    CATALOGUE_INDEX_MAX_TOPICS: int = Field(default=20000, ge=0)
    CATALOGUE_INDEX_RETENTION: float = Field(default=3600.0, gt=0)
    CATALOGUE_INDEX_TRIM_INTERVAL: float = Field(default=60.0, gt=0)
    CATALOGUE_INDEX_SNAPSHOT_INTERVAL: float = Field(default=300.0, ge=0)

    # Execution engine: "inprocess" (worker threads in the server) or "celery" (cartotheca worker)
    TASK_BACKEND: str = "inprocess"
    CELERY_BROKER_URL: str = "redis://127.0.0.1:6379/0"
    EXECUTION_WORKERS: int = 2
    EXECUTION_HEARTBEAT_SECONDS: float = 5.0
    EXECUTION_MAX_ATTEMPTS: int = 2
    EXECUTION_STEP_DELAY: float = 0.0  # seconds each job step waits; for crash-recovery tests

    # Monitoring (usage metrics, exceptions, threshold notifications; GeoNode's names)
    MONITORING_ENABLED: bool = True
    MONITORING_DATA_TTL: int = 365  # days metric values, exceptions and their requests are kept
    MONITORING_REQUESTS_TTL: int = 1  # days raw request events without an exception are kept
    MONITORING_COLLECTION_INTERVAL: int = 60  # seconds; the period metric values are stored in
    MONITORING_FLUSH_INTERVAL: float = 5.0  # seconds between writes of captured requests
    MONITORING_BUFFER_SIZE: int = 100000  # captured requests held in memory at most
    MONITORING_SKIP_PATHS: list[str] = Field(
        default_factory=lambda: ["/monitoring/", "/static/", "/favicon.ico"]
    )  # path prefixes not captured; entries starting with "^" are regular expressions
    MONITORING_HOST_NAME: str | None = None  # default: this machine's host name
    MONITORING_SERVICE_NAME: str | None = None  # default: "<host>-core"
    MONITORING_NOTIFICATION_GRACE_PERIOD: int = 600  # seconds; default of new notification checks
    EMAIL_HOST: str = "localhost"
    EMAIL_PORT: int = 25
    EMAIL_HOST_USER: str = ""
    EMAIL_HOST_PASSWORD: str = ""
    EMAIL_USE_TLS: bool = False  # STARTTLS
    EMAIL_USE_SSL: bool = False  # SMTP over TLS from the start
    DEFAULT_FROM_EMAIL: str = "webmaster@localhost"

    # Server
    HOST: str = "127.0.0.1"
    PORT: int = 8000
    WORKERS: int = 1
    LOG_LEVEL: Literal["critical", "error", "warning", "info", "debug", "trace"] = "info"
    ACCESS_LOG: bool = True  # one log line per request (uvicorn's access log)
    # Limits against hostile or too many clients, per server process (README "Limits")
    LIMIT_CONCURRENCY: int = 512  # open connections or running requests before 503; 0: no limit
    OVERLOAD_RETRY_AFTER: int = 5  # seconds, sent in Retry-After with that 503
    KEEP_ALIVE_TIMEOUT: int = 5  # seconds an idle keep-alive connection stays open
    MAX_REQUEST_HEADER_BYTES: int = 65536  # request line plus headers; more is 431
    MAX_REQUEST_HEADERS: int = 100  # header lines; more is 431
    REQUEST_HEADER_TIMEOUT: float = 20.0  # seconds to send complete headers, else the connection closes

    @field_validator("EXTRA_METADATA_SCHEMA")
    @classmethod
    def _extra_metadata_schemas_are_json_schemas(cls, value: dict[str, dict[str, Any]]):
        for kind, schema in value.items():
            if schema == DEFAULT_EXTRA_METADATA_ITEM:
                # Known to be valid (a test checks it). Checking it would import jsonschema,
                # whose format checker builds 38 grammars: about 1.5 s of every process's start.
                continue
            problem = json_schema.schema_problem(schema)
            if problem is not None:
                raise ValueError(f"EXTRA_METADATA_SCHEMA[{kind!r}] is not a JSON Schema: {problem}")
        return value

    @field_validator("WMS_ADVERTISED_CRS")
    @classmethod
    def _advertised_crs_are_epsg_codes(cls, value: list[str]) -> list[str]:
        codes = []
        for item in value:
            match = re.fullmatch(r"\s*EPSG:(\d+)\s*", item, re.IGNORECASE)
            if not match:
                raise ValueError(f"WMS_ADVERTISED_CRS: {item!r} is not an EPSG:<code>")
            try:
                pyproj.CRS.from_epsg(int(match.group(1)))
            except pyproj.exceptions.CRSError:
                raise ValueError(f"WMS_ADVERTISED_CRS: {item!r} is not a known EPSG code") from None
            code = f"EPSG:{int(match.group(1))}"
            if code not in codes:
                codes.append(code)
        if not codes:
            raise ValueError("WMS_ADVERTISED_CRS must list at least one EPSG code")
        return codes

    @field_validator("WEB_BASEMAP_URL")
    @classmethod
    def _basemap_is_an_xyz_template(cls, value: str | None) -> str | None:
        if not value:
            return None
        parsed = urlsplit(value)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError("WEB_BASEMAP_URL must be an http(s) URL")
        if not all(part in value for part in ("{z}", "{x}", "{y}")):
            raise ValueError("WEB_BASEMAP_URL must hold {z}, {x} and {y}")
        return value

    @field_validator("SITEURL")
    @classmethod
    def _siteurl_ends_with_slash(cls, value: str) -> str:
        return value if value.endswith("/") else value + "/"

    @field_validator("FORWARDED_ALLOW_IPS")
    @classmethod
    def _forwarded_allow_ips_are_addresses(cls, value: list[str]) -> list[str]:
        for item in value:
            if item != "*":
                try:
                    ipaddress.ip_network(item, strict=False)
                except ValueError:
                    raise ValueError(f"FORWARDED_ALLOW_IPS: {item!r} is not an IP address, "
                                     "a CIDR block or *") from None
        return value

    @field_validator("AXES_LOCKOUT_PARAMETERS")
    @classmethod
    def _lockout_parameters(cls, value: list[str | list[str]]) -> list[str | list[str]]:
        for item in value:
            names = [item] if isinstance(item, str) else item
            if not names or any(name not in ("ip_address", "username") for name in names):
                raise ValueError("AXES_LOCKOUT_PARAMETERS: each item is ip_address, username "
                                 "or a list of them (locked out together)")
        return value

    @property
    def site_base(self) -> str:
        """SITEURL without the trailing slash. The URLs the service answers with are built
        from ``cartotheca.siteurl`` instead (SITEURL when set, else the request's own base)."""
        return self.SITEURL.rstrip("/")

    @property
    def ows_concurrency(self) -> int:
        if self.OWS_CONCURRENCY is not None:
            return self.OWS_CONCURRENCY
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1

    @property
    def database_url(self) -> str:
        if self.DATABASE_URL:
            return self.DATABASE_URL
        return f"sqlite:///{(self.DATA_DIR / 'cartotheca.sqlite3').resolve()}"

    @property
    def raster_dir(self) -> Path:
        return self.RASTER_DIR if self.RASTER_DIR is not None else self.DATA_DIR / "rasters"

    @property
    def upload_dir(self) -> Path:
        return self.UPLOAD_DIR if self.UPLOAD_DIR is not None else self.DATA_DIR / "uploads"

    def ensure_data_dir(self) -> Path:
        self.DATA_DIR.mkdir(parents=True, exist_ok=True)
        return self.DATA_DIR

    @property
    def secret_key(self) -> str:
        """The signing key; generated on first use and kept in the data directory."""
        if self.SECRET_KEY:
            return self.SECRET_KEY
        path = self.ensure_data_dir() / "secret_key"
        if not path.exists():
            path.write_text(secrets.token_urlsafe(48))
            path.chmod(0o600)
        return path.read_text().strip()


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()


def settings_with(**overrides: Any) -> Settings:
    """A Settings object from the environment with some values replaced (tests, CLI flags)."""
    return Settings(**overrides)
