"""A typed index expression for the warp-access panel: `lane * 33`, `lane * 32 + (lane ^ 1)`.

The page sends the text; this module parses it with `ast` and evaluates it for the 32 lanes
of a warp, allowing only integer arithmetic on the name `lane` (also `tid`, `i`, `threadIdx.x`)
and integer constants. Nothing is `eval`ed; sizes, shifts and nesting are bounded, so any text
either gives 32 indices or an `InputError` that says what is wrong.
"""

from __future__ import annotations

import ast
import operator

from tilewise.errors import InputError

MAX_CHARS = 120
MAX_NODES = 60
MAX_VALUE = 1 << 40  # indices and intermediates stay below 2^40 elements
LANE_NAMES = ("lane", "tid", "i", "threadIdx_x")  # threadIdx.x is read as threadIdx_x

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_SYMBOL = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


def parse(text: str) -> ast.expr:
    """Parse and check an index expression; raise InputError naming what is not allowed."""
    text = str(text).strip().replace("threadIdx.x", "threadIdx_x")
    if not text:
        raise InputError("expr must be an index expression in `lane`, such as lane * 33, got an empty string")
    if len(text) > MAX_CHARS:
        raise InputError(f"expr must be at most {MAX_CHARS} characters, got {len(text)}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise InputError(f"expr must be an index expression such as lane * 33, got {text[:40]!r}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise InputError(f"expr must be at most {MAX_NODES} syntax nodes, got {len(nodes)}")
    for node in nodes:
        if isinstance(node, (ast.Expression, ast.Load)) or type(node) in _BINOPS:
            continue
        if isinstance(node, ast.BinOp):
            if type(node.op) not in _BINOPS:
                hint = " (use // for integer division)" if isinstance(node.op, ast.Div) else ""
                raise InputError(
                    f"expr may use only {' '.join(_SYMBOL.values())} and parentheses{hint}, got {text[:40]!r}"
                )
            continue
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            continue
        if isinstance(node, (ast.USub, ast.UAdd)):
            continue
        if isinstance(node, ast.Constant) and type(node.value) is int:
            if abs(node.value) >= MAX_VALUE:
                raise InputError(f"expr constants must be below 2^40, got {node.value}")
            continue
        if isinstance(node, ast.Name) and node.id in LANE_NAMES:
            continue
        what = node.id if isinstance(node, ast.Name) else type(node).__name__
        raise InputError(f"expr may use only the name `lane`, integers and + - * // % << >> & | ^, got {what!r}")
    return tree.body


def _eval(node: ast.expr, lane: int) -> int:
    if isinstance(node, ast.Constant):
        assert isinstance(node.value, int)  # _parse admits integer constants only
        return node.value
    if isinstance(node, ast.Name):
        return lane
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, lane)
        return -v if isinstance(node.op, ast.USub) else v
    assert isinstance(node, ast.BinOp)
    a, b = _eval(node.left, lane), _eval(node.right, lane)
    op = type(node.op)
    if op in (ast.FloorDiv, ast.Mod) and b == 0:
        raise InputError(f"expr divides by zero at lane {lane}")
    if op in (ast.LShift, ast.RShift) and not 0 <= b <= 40:
        raise InputError(f"expr shifts must be by 0 to 40 bits, got {b} at lane {lane}")
    out: int = _BINOPS[op](a, b)
    if abs(out) >= MAX_VALUE:
        raise InputError(f"expr values must stay below 2^40, got {out} at lane {lane}")
    return out


def lane_indices(text: str, lanes: int = 32) -> list[int]:
    """The expression's value for lanes 0..lanes-1: element indices, which must be >= 0."""
    tree = parse(text)
    out = []
    for lane in range(lanes):
        v = _eval(tree, lane)
        if v < 0:
            raise InputError(f"expr must give indices >= 0, got {v} at lane {lane}")
        out.append(v)
    return out
