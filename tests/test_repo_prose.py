"""The repository speaks of the code, never of how it was made.

A reader of the tree cannot see a tracker's issue numbers, the sessions that wrote the code, the people or
agents who did it, or the two external texts the rules were first read from. So every comment, docstring,
page and report states the rule and its figure where it is used (docs/sources.md lists each figure the
tests check and the test that checks it), and history goes to CHANGELOG.md as release notes.
"""

import codecs
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "docs", "tests", "benchmarks", "README.md", "CONTRIBUTING.md", "Makefile", "pyproject.toml")
TEXT = {".py", ".md", ".sh", ".js", ".html", ".css", ".toml", ".txt", ".json", ".yml", ".yaml", ".cfg", ""}
# History and the list of external figures are the two places allowed to name what the code came from.
ALLOWED = {"CHANGELOG.md", "docs/changelog.md", "docs/sources.md", "tests/test_repo_prose.py"}
MAX_BYTES = 2_000_000  # the committed sweep rows (.jsonl) are data, not prose

FORBIDDEN = {
    "an issue number": r"\bissues? ?#?\d+\b|\bissue's\b",
    "a session": r"\bthis session\b|\bsessions? ?-?\d+\b|\bthe session's\b",
    "a helper (the one who wrote it)": r"\b(?:gemm|mhmoe|attention|decode|backward|autotune|kernels?|layers|inputs|results)"
    r" helper\b|\bhelper's\b|\bthe lead(?:'s)?\b",
    "the tips document": r"\btips document\b|\bthe tips\b",
    "the GEMM article": r"\bgemm article\b|\bthe article(?:'s)?\b",
    "the seed documents": r"\bthe seeds?\b(?!\s*(?:=|is|of the|for|value|\d))|\bseeds'|\bseed's\b|shared/seeds",
    "how the work went": r"\bbefore this work\b|\bthe team's\b",
}
PATTERN = re.compile("|".join(f"(?P<g{i}>{p})" for i, p in enumerate(FORBIDDEN.values())), re.IGNORECASE)
LABELS = list(FORBIDDEN)


def _files() -> list[Path]:
    out: list[Path] = []
    for name in SCANNED:
        p = ROOT / name
        paths = [p] if p.is_file() else sorted(q for q in p.rglob("*") if q.is_file())
        for q in paths:
            rel = q.relative_to(ROOT).as_posix()
            if (
                rel in ALLOWED
                or "__pycache__" in rel
                or ".egg-info" in rel
                or q.suffix not in TEXT
                or q.stat().st_size > MAX_BYTES
            ):
                continue
            out.append(q)
    return out


def _hits(text: str) -> list[tuple[int, str, str]]:
    hits = []
    for line_no, line in enumerate(text.splitlines(), start=1):
        for m in PATTERN.finditer(line):
            label = LABELS[int(next(k for k, v in m.groupdict().items() if v is not None)[1:])]
            hits.append((line_no, label, m.group(0)))
    return hits


def test_the_pattern_catches_what_it_promises():
    # the phrases the pattern must refuse, ROT13-encoded so that this file does not say them itself
    bad = [
        codecs.decode(x, "rot13")
        for x in (
            "rqvg ol gur trzz urycre, frffvba 4",
            "Orsber guvf frffvba'f zbqry",
            "(vffhr 16)",
            "gur gvcf qbphzrag: 4096 SYBCf",
            "gur TRZZ negvpyr'f rknzcyr",
            "gur frrq'f svther",
            "gur frrqf' jvqtrgf",
            "Orsber guvf jbex n pnyy pbfg 66 hf",
            "gur yrnq'f svany qrivpr pnyy",
            "../funerq/frrqf/000",
        )
    ]
    for line in bad:
        assert _hits(line), line
    good = [
        "seed_everything(seed); the seed is the test's name",
        "the seed = 1234",
        "tests/helpers.py has the poison helpers",
        "HazardTracker",
        "one launcher helper per job",
        "a session of torch.compile",
    ]
    for line in good:
        assert not _hits(line), (line, _hits(line))


def test_no_file_speaks_of_how_it_was_made():
    files = _files()
    assert len(files) > 200, f"only {len(files)} files scanned: the walk is broken"
    found = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        found += [f"{f.relative_to(ROOT)}:{n}: {label}: {word!r}" for n, label, word in _hits(text)]
    assert not found, "state the rule and its figure (docs/sources.md), or put history in CHANGELOG.md:\n" + "\n".join(
        found
    )


def test_sources_page_names_tests_that_exist():
    """docs/sources.md names, for each outside figure, the test that checks it: each must exist."""
    text = (ROOT / "docs" / "sources.md").read_text()
    refs = re.findall(r"`(tests/[\w/]+\.py)(?:::(\w+))?`", text)
    assert len(refs) > 30
    missing = []
    for path, name in refs:
        f = ROOT / path
        if not f.is_file():
            missing.append(path)
        elif name and not re.search(rf"^def {name}\(", f.read_text(), re.MULTILINE):
            missing.append(f"{path}::{name}")
    assert not missing, f"docs/sources.md names tests that do not exist: {missing}"
