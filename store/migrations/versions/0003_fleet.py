"""Many hosts: when each job ran, and procrastinate's queue on PostgreSQL.

A job's row gains the time its run started and ended (a device's runs must never overlap, and
`accelopt jobs` shows them). On PostgreSQL the fleet's dispatch lives in procrastinate's
tables beside the log, created here from the schema of the procrastinate release that
pyproject.toml pins: a later release's own migrations come in as a later revision here, so
that one `accelopt db upgrade` keeps both in step. SQLite has one host and needs none of it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_time = sa.DateTime(timezone=True)


def _literal(sql: str) -> str:
    return sql.replace("%", "%%")


def upgrade() -> None:
    with op.batch_alter_table("jobs") as table:
        table.add_column(sa.Column("started_at", _time, nullable=True))
        table.add_column(sa.Column("finished_at", _time, nullable=True))
    if op.get_bind().dialect.name == "postgresql":
        # imported here: every command that opens the log loads this file to learn the head
        # revision, and procrastinate is the fleet's alone
        from procrastinate.schema import SchemaManager  # noqa: PLC0415

        # the driver reads % as a placeholder: doubled, they reach the server as written
        op.get_bind().exec_driver_sql(_literal(SchemaManager.get_schema()))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        # procrastinate's objects, by its name prefix, in this schema only
        op.get_bind().exec_driver_sql(
            _literal(
                """
DO $$
DECLARE item record;
BEGIN
    FOR item IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = current_schema() AND c.relkind = 'r'
        AND c.relname LIKE 'procrastinate%' LOOP
        EXECUTE format('DROP TABLE IF EXISTS %I CASCADE', item.relname);
    END LOOP;
    FOR item IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
        JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate%' LOOP
        EXECUTE format('DROP FUNCTION IF EXISTS %s CASCADE', item.signature);
    END LOOP;
    FOR item IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
        WHERE n.nspname = current_schema() AND t.typtype = 'e'
        AND t.typname LIKE 'procrastinate%' LOOP
        EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', item.typname);
    END LOOP;
END $$;
"""
            )
        )
    with op.batch_alter_table("jobs") as table:
        table.drop_column("finished_at")
        table.drop_column("started_at")
