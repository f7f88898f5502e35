"""cartotheca.api.routes.thumbnails."""

from fastapi import APIRouter

router = APIRouter()
