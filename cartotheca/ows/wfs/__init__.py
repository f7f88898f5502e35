"""cartotheca.ows.wfs: the Web Feature Service (1.0.0, 1.1.0, 2.0.0), read-only.

``handle`` routes a request to its operation: GetCapabilities lists the vector datasets the
requester may view (``capabilities``); DescribeFeatureType answers their XML schema from stored
attributes (``describe``); GetFeature needs the download permission and streams features from
the store (``parsing`` → ``plan`` → ``getfeature``). Transactions and locks are refused.
"""

from __future__ import annotations

from starlette.responses import Response

from cartotheca.errors import OWSException
from cartotheca.ows.request import OWSRequest
from cartotheca.ows.wfs.capabilities import capabilities_document
from cartotheca.ows.wfs.describe import describe_feature_type, schema_media_type
from cartotheca.ows.wfs.feature_types import check_found, feature_types, type_names
from cartotheca.ows.wfs.getfeature import get_feature
from cartotheca.ows.wfs.versions import negotiate, requested_version

__all__ = ["handle"]

READ_ONLY_REFUSED = ("transaction", "lockfeature", "getfeaturewithlock", "createstoredquery",
                     "dropstoredquery")


def handle(req: OWSRequest) -> Response:
    operation = req.operation.lower()
    if operation == "getcapabilities":
        version = negotiate(req)
        return Response(capabilities_document(req, version, feature_types(req)),
                        media_type="application/xml")
    version = requested_version(req)
    if operation == "describefeaturetype":
        names = type_names(req, version, required=False)
        types = feature_types(req, names) if names else feature_types(req)
        if names:
            check_found(req, names, types)
        return Response(describe_feature_type(req, version, types),
                        media_type=schema_media_type(version))
    if operation == "getfeature":
        return get_feature(req, version)
    if operation in READ_ONLY_REFUSED:
        raise OWSException("OperationNotSupported", f"{req.operation} is not supported: this "
                           "service is read-only", locator=req.operation, version=version)
    if not operation:
        raise OWSException("MissingParameterValue", "Parameter REQUEST is required",
                           locator="request", version=version)
    raise OWSException("OperationNotSupported", f"Unknown operation {req.operation}",
                       locator="request", version=version)
