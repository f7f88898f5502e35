"""cartotheca.api.routes.downloads."""

from fastapi import APIRouter

router = APIRouter()
