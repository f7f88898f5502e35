"""cartotheca.api.routes.datasets."""

from fastapi import APIRouter

router = APIRouter()
