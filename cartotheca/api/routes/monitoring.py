"""cartotheca.api.routes.monitoring."""

from fastapi import APIRouter

router = APIRouter()
