"""The scrubber finds a secret written as it is and in the encodings an endpoint or a library
may echo it in, wherever it stands in a longer text."""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import urllib.parse

from hypothesis import given
from hypothesis import strategies as st

from store.memory import MemoryEventStore
from store.scrub import REDACTED, Scrubber

KEY = "sk-live-4f9c2a7e81d0b6a3"
ODD_KEY = "p@ss/word+with space&more="
"""A secret with characters that percent-encoding and base64's alphabets change."""


def leaks(text: str, secret: str) -> bool:
    """Whether any 8 bytes in a row of the secret can be read back from `text`: as written,
    in hex, percent-decoded, or base64-decoded at any alignment of either alphabet."""
    raw = secret.encode()
    pieces = {raw[i : i + 8] for i in range(len(raw) - 7)}
    readings = [text.encode(), urllib.parse.unquote_plus(text).encode()]
    for word in re.findall(r"[A-Za-z0-9+/=_-]+", text.replace(REDACTED, " ")):
        for start in range(2):
            digits = word[start:]
            with contextlib.suppress(ValueError):
                readings.append(bytes.fromhex(digits[: len(digits) - len(digits) % 2]))
        for alphabet in (word, word.replace("-", "+").replace("_", "/")):
            for start in range(4):
                chunk = alphabet[start:]
                chunk = chunk[: len(chunk) - len(chunk) % 4]
                with contextlib.suppress(binascii.Error, ValueError):
                    readings.append(base64.b64decode(chunk, validate=True))
    return any(piece in reading for reading in readings for piece in pieces)


def test_the_forms_of_a_key_are_each_redacted() -> None:
    scrubber = Scrubber([KEY, ODD_KEY])
    raw = KEY.encode()
    for form in (
        KEY,
        raw.hex(),
        raw.hex().upper(),
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(b"\xff\xfe" + raw).decode(),
        urllib.parse.quote(ODD_KEY, safe=""),
        urllib.parse.quote_plus(ODD_KEY),
        base64.b64encode(ODD_KEY.encode()).decode(),
    ):
        text = f"the endpoint said: {form}."
        scrubbed = scrubber.text(text)
        assert REDACTED in scrubbed, form
        assert not leaks(scrubbed, KEY), scrubbed
        assert not leaks(scrubbed, ODD_KEY), scrubbed
        assert leaks(text, KEY) or leaks(text, ODD_KEY)  # the check sees the unscrubbed form


@given(prefix=st.binary(max_size=40), suffix=st.binary(max_size=40), urlsafe=st.booleans())
def test_a_key_inside_any_base64_blob_is_redacted(
    prefix: bytes, suffix: bytes, urlsafe: bool
) -> None:
    encode = base64.urlsafe_b64encode if urlsafe else base64.b64encode
    blob = encode(prefix + KEY.encode() + suffix).decode()
    scrubbed = Scrubber([KEY]).text(f"data: {blob}")
    assert REDACTED in scrubbed
    assert not leaks(scrubbed, KEY), scrubbed


def test_text_without_a_secret_and_short_secrets_are_left_alone() -> None:
    text = "ordinary words, 0123456789abcdef, aGVsbG8gd29ybGQ= and EMPTY"
    assert Scrubber([KEY]).text(text) == text
    assert Scrubber(["EMPTY", "test"]).text(text) == text  # too short to be a key
    assert not Scrubber(["short"])


def test_an_extended_scrubber_keeps_the_forms_of_the_first_secrets() -> None:
    extended = Scrubber([KEY]).extended([ODD_KEY])
    assert extended.text(KEY.encode().hex()) == REDACTED
    assert REDACTED in extended.text(base64.b64encode(ODD_KEY.encode()).decode())


def test_values_are_scrubbed_in_keys_and_nested_lists() -> None:
    scrubbed = Scrubber([KEY]).value({KEY: [KEY.encode().hex(), {"n": 1}], "ok": "fine"})
    assert scrubbed == {REDACTED: [REDACTED, {"n": 1}], "ok": "fine"}


def test_a_store_scrubs_each_text_of_a_batch_of_blobs_and_keeps_binary_whole() -> None:
    store = MemoryEventStore(scrubber=Scrubber([KEY]))
    binary = b"\xff\xfe" + KEY.encode()  # not UTF-8: no text a secret could be read from
    text, kept = store.put_blobs([f"api_key = {KEY!r}\n", binary])
    assert KEY not in store.get_text(text)
    assert REDACTED in store.get_text(text)
    assert store.get_blob(kept) == binary
    assert text == store.put_blob(f"api_key = {KEY!r}\n")
