"""Assemble README.md from docs/readme/*.md in a fixed order (one section per area).

python scripts/assemble_readme.py
"""

from pathlib import Path

ORDER = [
    "00_intro.md",
    "model.md",
    "sim.md",
    "kernels_gemm.md",
    "attention.md",
    "moe.md",
    "ffn.md",
    "explore.md",
    "99_status.md",
]

root = Path(__file__).resolve().parent.parent
parts = []
for name in ORDER:
    p = root / "docs" / "readme" / name
    if p.exists():
        parts.append(p.read_text().strip() + "\n")
(root / "README.md").write_text("\n".join(parts))
print(f"README.md: {sum(len(p) for p in parts)} characters from {len(parts)} sections")
