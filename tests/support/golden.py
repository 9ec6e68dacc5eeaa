"""The golden corpus (tests/data/golden/): events exactly as stored by earlier code."""

from __future__ import annotations

import json
from datetime import datetime

from events.envelope import StoredEvent
from tests.support import DATA

__all__ = ["GOLDEN", "corpus"]

GOLDEN = DATA / "golden"


def corpus(name: str) -> list[StoredEvent]:
    records = []
    for line in (GOLDEN / name).read_text(encoding="utf-8").splitlines():
        raw = json.loads(line)
        raw["recorded_at"] = datetime.fromisoformat(raw["recorded_at"])
        records.append(StoredEvent(**raw))
    return records
