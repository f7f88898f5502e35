"""cartotheca.api.routes.oauth_applications: staff register the OAuth2 clients of ``/o/token/``.

What ``cartotheca oauth-application`` does, for the staff page ``/account/applications``
(GeoNode registers them in its Django admin). A secret is answered once, at creation.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from cartotheca.api.deps import DbDep, StaffDep, read_body
from cartotheca.api.responses import JSON, no_content
from cartotheca.catalogue import oauth

router = APIRouter(tags=["auth"])
BodyDep = Annotated[Any, Depends(read_body)]


@router.get("/api/v2/oauth-applications", summary="OAuth2 applications (staff)")
def list_applications(db: DbDep, principal: StaffDep) -> JSON:
    return JSON({"applications": oauth.list_applications(db)})


@router.post("/api/v2/oauth-applications", status_code=201,
             summary="Register an OAuth2 application (staff); its secret is answered once")
def create_application(db: DbDep, principal: StaffDep, body: BodyDep) -> JSON:
    fields = oauth.ApplicationFields.model_validate(body)
    application, secret = oauth.register(db, principal, fields)
    db.commit()
    owner = fields.user
    return JSON({"application": oauth.application_record(application, owner),
                 "client_secret": secret}, status_code=201)


@router.delete("/api/v2/oauth-applications/{client_id}", status_code=204,
               summary="Remove an OAuth2 application and its tokens (staff)")
def delete_application(client_id: str, db: DbDep, principal: StaffDep):
    oauth.delete_application(db, client_id)
    db.commit()
    return no_content()
