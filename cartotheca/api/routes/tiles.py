"""cartotheca.api.routes.tiles."""

from fastapi import APIRouter

router = APIRouter()
