"""cartotheca.api.routes.users."""

from fastapi import APIRouter

router = APIRouter()
