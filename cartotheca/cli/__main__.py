"""``python -m cartotheca.cli``: the same commands as ``cartotheca``."""

from cartotheca.cli import main

main()
