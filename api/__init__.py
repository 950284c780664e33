"""The HTTP edge of codemem: contract types, auth, error mapping, and the Litestar app."""

from api.app import create_app

__all__ = ["create_app"]
