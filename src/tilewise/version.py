"""The package's version, in a module of its own so every layer can read it (the package's __init__
exports it as `tilewise.__version__`; benchmark rows record it beside the commit)."""

VERSION = "0.1.0"
