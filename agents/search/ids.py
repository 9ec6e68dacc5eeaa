"""Identifiers that say what a step is for, so that a step redone after a crash finds its
earlier result (and its recorded LLM answer) instead of doing the work again."""

from __future__ import annotations

import hashlib

__all__ = ["candidate_id", "digest", "plan_id"]


def digest(*parts: object, length: int = 16) -> str:
    text = "\x1f".join(str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


def plan_id(search_id: str, iteration: int, parent: str, index: int) -> str:
    return "p" + digest(search_id, iteration, parent, index)


def candidate_id(search_id: str, origin: str, *parts: object) -> str:
    return "c" + digest(search_id, origin, *parts)
