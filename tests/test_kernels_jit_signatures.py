"""A @triton.jit kernel annotates only its constexpr parameters.

Triton's compiler (3.6 on the H200) refuses a kernel whose parameter annotation names a global that is not a
constexpr (`x_ptr: Any` -> "Cannot access global variable Any from within @jit'ed function"); the
interpreter accepts it, so no CPU kernel test sees the failure. This reads every kernel file with `ast`.
"""

import ast
import os

import pytest

KERNELS = os.path.join(os.path.dirname(__file__), "..", "src", "tilewise", "kernels")
FILES = sorted(f for f in os.listdir(KERNELS) if f.endswith(".py"))


def _jit_functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            yield node


def _bad(fn: ast.FunctionDef) -> list[str]:
    args = [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
    out = [a.arg for a in args if a.annotation is not None and "constexpr" not in ast.unparse(a.annotation)]
    return out + (["return"] if fn.returns is not None else [])


@pytest.mark.parametrize("name", FILES)
def test_jit_kernels_annotate_only_constexprs(name):
    with open(os.path.join(KERNELS, name), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    bad = {fn.name: _bad(fn) for fn in _jit_functions(tree) if _bad(fn)}
    assert not bad, f"{name}: annotations Triton's compiler refuses (only tl.constexpr may be annotated): {bad}"


def test_the_check_catches_an_annotated_pointer():
    tree = ast.parse("@triton.jit\ndef k(x_ptr: Any, n, B: tl.constexpr) -> Any:\n    pass\n")
    assert [_bad(fn) for fn in _jit_functions(tree)] == [["x_ptr", "return"]]
