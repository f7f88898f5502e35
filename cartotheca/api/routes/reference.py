"""cartotheca.api.routes.reference."""

from fastapi import APIRouter

router = APIRouter()
