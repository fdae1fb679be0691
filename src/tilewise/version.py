"""The package's version, in the lowest layer so that every layer (the benchmark rows too) can read it."""

__version__ = "0.1.0"
