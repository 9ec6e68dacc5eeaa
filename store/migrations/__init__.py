"""Alembic migrations of the event database (run by `accelopt db upgrade`)."""
