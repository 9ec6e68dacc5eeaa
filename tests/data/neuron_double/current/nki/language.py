"""TEST DOUBLE marker: nki/__init__.py installs nkisim's language module as `nki.language`
before this file could be imported. The file is here because the real package has
`nki.language` (the empty PyPI placeholder does not, and detection tells them apart by it)."""
