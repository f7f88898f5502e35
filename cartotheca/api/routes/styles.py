"""cartotheca.api.routes.styles."""

from fastapi import APIRouter

router = APIRouter()
