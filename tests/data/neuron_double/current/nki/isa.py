"""TEST DOUBLE marker: nki/__init__.py installs nkisim's isa module as `nki.isa`
before this file could be imported. The file is here because the real package has
`nki.isa` (the empty PyPI placeholder does not, and detection tells them apart by it)."""
