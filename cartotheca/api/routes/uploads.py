"""cartotheca.api.routes.uploads."""

from fastapi import APIRouter

router = APIRouter()
