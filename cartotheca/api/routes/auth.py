"""cartotheca.api.routes.auth."""

from fastapi import APIRouter

router = APIRouter()
