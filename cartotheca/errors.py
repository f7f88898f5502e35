"""cartotheca.errors: the domain exception family; no HTTP here.

    CartothecaError                 base; carries a message, a GeoNode error code and an OGC code
    ├── InvalidInput                400  invalid            (bad body, bad value)
    │   ├── InvalidQuery            400  invalid            (filter{}, sort[], extent, page_size ...)
    │   ├── InvalidFilter           400  invalid            (an OGC filter: FES, CQL, an SLD rule's)
    │   └── ParseError              400  parse_error        (malformed JSON, malformed query key)
    ├── NotAuthenticated            401  not_authenticated  (credentials needed)
    ├── AuthenticationFailed        401  authentication_failed
    ├── PermissionDenied            403  permission_denied
    ├── NotFound                    404  not_found
    ├── MethodNotAllowed            405  method_not_allowed
    ├── UnsupportedMediaType        415  unsupported_media_type
    ├── Conflict                    409  conflict
    ├── TooManyAttempts             429  throttled          (failed logins; carries retry_after)
    ├── Busy                        503  service_unavailable (no capacity now; carries retry_after)
    │   └── StoreUnavailable        503  service_unavailable (the file store cannot be reached)
    ├── LimitExceeded               400  (code given by the raiser)
    └── OWSException                     (an OGC service's refusal, OGC code given by the raiser)

``api/errors.py`` maps each class to its status and the wire body in one table. For the OGC
services each exception also carries what its exception report says: ``ogc_code`` (every
domain error is an InvalidParameterValue unless its class says otherwise), ``ogc_locator``, and
``ogc_status`` when the report's HTTP status is not the one OWS Common gives the code;
``ows/dispatch.py`` turns them into the report of the service and version asked.
"""

from __future__ import annotations


class CartothecaError(Exception):
    code = "error"
    ogc_code = "InvalidParameterValue"
    ogc_locator: str | None = None
    ogc_status: int | None = None

    def __init__(self, message: str = "", *, code: str | None = None, extra: list[str] | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or []

    @property
    def messages(self) -> list[str]:
        return [self.message, *self.extra]


class InvalidInput(CartothecaError):
    code = "invalid"


class InvalidQuery(InvalidInput):
    code = "invalid"


class InvalidFilter(InvalidInput):
    """An OGC filter that cannot be read or answered. OGC services report it as
    ``InvalidParameterValue`` located at ``filter``."""

    ogc_locator = "filter"


class ParseError(InvalidInput):
    code = "parse_error"


class NotAuthenticated(CartothecaError):
    code = "not_authenticated"

    def __init__(self, message: str = "Authentication credentials were not provided.", **kw):
        super().__init__(message, **kw)


class AuthenticationFailed(CartothecaError):
    code = "authentication_failed"

    def __init__(self, message: str = "Invalid username/password.", **kw):
        super().__init__(message, **kw)


class PermissionDenied(CartothecaError):
    code = "permission_denied"
    ogc_code = "OperationProcessingFailed"
    ogc_status = 403

    def __init__(self, message: str = "You do not have permission to perform this action.", **kw):
        super().__init__(message, **kw)


class NotFound(CartothecaError):
    code = "not_found"

    def __init__(self, message: str = "Not found.", **kw):
        super().__init__(message, **kw)


class MethodNotAllowed(CartothecaError):
    code = "method_not_allowed"


class UnsupportedMediaType(CartothecaError):
    code = "unsupported_media_type"


class Conflict(CartothecaError):
    code = "conflict"


class LimitExceeded(CartothecaError):
    code = "limit_exceeded"


class TooManyAttempts(CartothecaError):
    """Too many failed logins for an account or from an address: refused until the cool-off
    ends, ``retry_after`` seconds from now."""

    code = "throttled"

    def __init__(self, retry_after: int, **kw):
        super().__init__("Too many failed login attempts; try again later.", **kw)
        self.retry_after = retry_after


class Busy(CartothecaError):
    """The server cannot take this work right now (e.g. every password check slot is taken)."""

    code = "service_unavailable"

    def __init__(self, message: str, retry_after: int = 1, **kw):
        super().__init__(message, **kw)
        self.retry_after = retry_after


class StoreUnavailable(Busy):
    """The file store (an S3-compatible server) did not answer or failed: the request may well
    succeed once it is back, so OGC services report it with HTTP 503 too."""

    ogc_code = "NoApplicableCode"
    ogc_status = 503

    def __init__(self, message: str = "The file store is temporarily unavailable; try again later.",
                 retry_after: int = 5, **kw):
        super().__init__(message, retry_after, **kw)


class OWSException(CartothecaError):
    """A request an OGC service refuses with the OGC exception ``code`` the standard names.

    ``version`` is the service version whose report format answers, when the raiser knows it
    better than the request's VERSION; ``status`` overrides the HTTP status of the code."""

    def __init__(self, code: str, message: str, *, locator: str | None = None,
                 version: str | None = None, status: int | None = None):
        super().__init__(message)
        self.ogc_code = code
        self.ogc_locator = locator
        self.ogc_status = status
        self.version = version
