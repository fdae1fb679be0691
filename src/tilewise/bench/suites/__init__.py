"""Benchmark suites: one module per kernel family, each with

    NAME: str                      # the `tilewise bench NAME` sub-command
    HELP: str                      # one line for --help
    def add_arguments(parser): ... # suite-specific options (e.g. --shapes)
    def run(args, progress) -> list[dict]:  # rows made with tilewise.bench.harness.make_row

`progress(iterable, total=None, desc=None)` wraps the sweep in a progress bar.
"""
