"""cartotheca.api.routes.groups."""

from fastapi import APIRouter

router = APIRouter()
