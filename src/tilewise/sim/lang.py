"""The kernel language: a Python function written like a CUDA kernel, rewritten for the executor.

    @kernel
    def block_sum(x, out, n):
        s = shared(256, float32)
        tid = threadIdx.x
        i = blockIdx.x * blockDim.x + tid
        s[tid] = x[i] if i < n else 0.0
        syncthreads()
        stride = blockDim.x // 2
        while stride > 0:
            if tid < stride:
                s[tid] += s[tid + stride]
            syncthreads()
            stride >>= 1
        if tid == 0:
            out[blockIdx.x] = s[0]

A per-thread value is a numpy vector over the block's threads; the executor runs the whole block at
once under a lane mask. `@kernel` rewrites the function's syntax tree so that ordinary Python control
flow works on per-thread values:

- `if c:` / `else:` push the mask `active & c`, then `active & ~c` (both sides run, as on the GPU);
  a condition that is the same for every active thread is an ordinary branch.
- `while c:` and `for i in range(...)` keep looping while any thread's condition holds (the warp waits
  for its slowest thread); `break`, `continue` and `return` remove the threads that take them.
- `x = v` under a mask keeps the inactive threads' old values of x.
- `a if c else b`, `and`, `or`, `not` and chained comparisons evaluate each side under its own mask, so
  `A[i] if i < n else 0.0` never reads A[i] for a thread with i >= n (a predicated load).
- `X[i]` and `X[i] = v` on a global or shared array are memory instructions: the executor records
  the addresses of each warp's active lanes, per source line.

Line numbers stay those of the source file, so reports and hazards point at the kernel's own lines.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tilewise.errors import InputError

RT = "__tw_rt__"  # the executor, set in the kernel's globals at launch


@dataclass
class Site:
    """One memory expression in the source: `sA[ty][k]` on line 12."""

    id: int
    line: int
    col: int
    text: str
    store: bool


@dataclass
class KernelInfo:
    name: str
    filename: str
    first_line: int
    source_lines: dict[int, str]
    sites: list[Site] = field(default_factory=list)


class _Rewriter(ast.NodeTransformer):
    def __init__(self, info: KernelInfo, device: bool) -> None:
        self.info = info
        self.device = device
        self.tmp = 0
        self.depth = 0  # control-flow nesting inside the function

    # ---------------------------------------------------------------- helpers
    def _name(self, prefix: str) -> str:
        self.tmp += 1
        return f"_tw_{prefix}{self.tmp}"

    def _rt(self, method: str, *args: ast.expr, node: ast.AST) -> ast.Call:
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id=RT, ctx=ast.Load()), attr=method, ctx=ast.Load()),
            args=list(args),
            keywords=[],
        )
        return ast.copy_location(call, node)

    def _site(self, node: ast.expr, store: bool) -> ast.Constant:
        text = ast.unparse(node)
        s = Site(len(self.info.sites), node.lineno, node.col_offset, text, store)
        self.info.sites.append(s)
        return ast.Constant(s.id)

    def _tick(self, node: ast.stmt) -> ast.stmt:
        return ast.copy_location(ast.Expr(self._rt("tick", ast.Constant(node.lineno), node=node)), node)

    def _lambda(self, expr: ast.expr) -> ast.Lambda:
        lam = ast.Lambda(
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]), body=expr
        )
        return ast.copy_location(lam, expr)

    def _merge_assign(self, name: str, value: ast.expr, node: ast.AST) -> list[ast.stmt]:
        # name = value if RT.full else RT.merge(value, locals().get(name))
        old = ast.Call(
            func=ast.Attribute(
                value=ast.Call(func=ast.Name(id="locals", ctx=ast.Load()), args=[], keywords=[]),
                attr="get",
                ctx=ast.Load(),
            ),
            args=[ast.Constant(name)],
            keywords=[],
        )
        tmp = self._name("v")
        body = [
            ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=value),
            ast.If(
                test=ast.Attribute(value=ast.Name(id=RT, ctx=ast.Load()), attr="full", ctx=ast.Load()),
                body=[ast.Assign(targets=[ast.Name(id=name, ctx=ast.Store())], value=ast.Name(id=tmp, ctx=ast.Load()))],
                orelse=[
                    ast.Assign(
                        targets=[ast.Name(id=name, ctx=ast.Store())],
                        value=self._rt("merge", ast.Name(id=tmp, ctx=ast.Load()), old, node=node),
                    )
                ],
            ),
        ]
        for b in body:
            ast.copy_location(b, node)
            ast.fix_missing_locations(b)
        return body

    # ---------------------------------------------------------------- statements
    def _stmts(self, stmts: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for s in stmts:
            r = self.visit(s)
            if r is None:
                continue
            out.extend(r if isinstance(r, list) else [r])
        return out

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        if self.depth > 0 or getattr(self, "_seen_fn", False):
            raise InputError(f"line {node.lineno}: nested functions are not supported in a kernel; use @device")
        self._seen_fn = True
        node.decorator_list = []
        node.body = self._stmts(node.body)
        return node

    def _simple(self, node: ast.stmt, new: list[ast.stmt] | ast.stmt) -> list[ast.stmt]:
        new = new if isinstance(new, list) else [new]
        return [self._tick(node), *new]

    def visit_Expr(self, node: ast.Expr) -> Any:
        node.value = self.visit(node.value)
        return self._simple(node, node)

    def visit_Assign(self, node: ast.Assign) -> Any:
        value = self.visit(node.value)
        if len(node.targets) != 1:
            raise InputError(f"line {node.lineno}: chained assignment (a = b = c) is not supported in a kernel")
        t = node.targets[0]
        if isinstance(t, ast.Name):
            return self._simple(node, self._merge_assign(t.id, value, node))
        if isinstance(t, ast.Subscript):
            call = self._rt("store", self.visit(t.value), self.visit(t.slice), value, self._site(t, True), node=node)
            return self._simple(node, ast.copy_location(ast.Expr(call), node))
        if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            tmp = self._name("t")
            out: list[ast.stmt] = [
                ast.copy_location(ast.Assign(targets=[ast.Name(id=tmp, ctx=ast.Store())], value=value), node)
            ]
            for i, e in enumerate(t.elts):
                assert isinstance(e, ast.Name)  # checked above
                item = ast.Subscript(value=ast.Name(id=tmp, ctx=ast.Load()), slice=ast.Constant(i), ctx=ast.Load())
                out += self._merge_assign(e.id, ast.copy_location(item, node), node)
            return self._simple(node, [ast.fix_missing_locations(o) for o in out])
        node.value = value
        return self._simple(node, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        if node.value is None:
            return None
        return self.visit_Assign(ast.copy_location(ast.Assign(targets=[node.target], value=node.value), node))

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        t = node.target
        rhs = self.visit(node.value)
        if isinstance(t, ast.Name):
            cur = ast.Name(id=t.id, ctx=ast.Load())
            value = ast.copy_location(ast.BinOp(left=cur, op=node.op, right=rhs), node)
            return self._simple(node, self._merge_assign(t.id, value, node))
        if isinstance(t, ast.Subscript):
            obj, idx = self._name("o"), self._name("i")
            load = self._rt(
                "load",
                ast.Name(id=obj, ctx=ast.Load()),
                ast.Name(id=idx, ctx=ast.Load()),
                self._site(t, False),
                node=node,
            )
            new = ast.BinOp(left=load, op=node.op, right=rhs)
            store = self._rt(
                "store",
                ast.Name(id=obj, ctx=ast.Load()),
                ast.Name(id=idx, ctx=ast.Load()),
                new,
                self._site(t, True),
                node=node,
            )
            out = [
                ast.Assign(targets=[ast.Name(id=obj, ctx=ast.Store())], value=self.visit(t.value)),
                ast.Assign(targets=[ast.Name(id=idx, ctx=ast.Store())], value=self.visit(t.slice)),
                ast.Expr(store),
            ]
            return self._simple(node, [ast.fix_missing_locations(ast.copy_location(o, node)) for o in out])
        raise InputError(f"line {node.lineno}: unsupported augmented assignment target {ast.unparse(t)}")

    def visit_Return(self, node: ast.Return) -> Any:
        if self.device:
            if self.depth > 0:
                raise InputError(
                    f"line {node.lineno}: a @device function may return only at its end, not inside if/for/while"
                )
            node.value = self.visit(node.value) if node.value is not None else None
            return self._simple(node, node)
        if node.value is not None:
            raise InputError(f"line {node.lineno}: a kernel returns nothing; write results to an array")
        # if RT.exit(): return   (the active threads exit; the others go on)
        stmt = ast.If(test=self._rt("exit", node=node), body=[ast.Return(value=None)], orelse=[])
        return self._simple(node, ast.fix_missing_locations(ast.copy_location(stmt, node)))

    def _loop_jump(self, node: ast.stmt, method: str, jump: ast.stmt) -> list[ast.stmt]:
        stmt = ast.If(test=self._rt(method, node=node), body=[jump], orelse=[])
        return self._simple(node, ast.fix_missing_locations(ast.copy_location(stmt, node)))

    def visit_Break(self, node: ast.Break) -> Any:
        return self._loop_jump(node, "brk", ast.Break())

    def visit_Continue(self, node: ast.Continue) -> Any:
        return self._loop_jump(node, "cont", ast.Continue())

    def visit_If(self, node: ast.If) -> Any:
        k = self._name("k")
        test = self.visit(node.test)
        self.depth += 1
        body = self._stmts(node.body)
        orelse = self._stmts(node.orelse)
        self.depth -= 1

        def K() -> ast.Name:
            return ast.Name(id=k, ctx=ast.Load())

        out: list[ast.stmt] = [
            ast.Assign(
                targets=[ast.Name(id=k, ctx=ast.Store())],
                value=self._rt("branch", test, ast.Constant(node.lineno), node=node),
            ),
            ast.If(test=K(), body=body or [ast.Pass()], orelse=[]),
        ]
        two = ast.Compare(left=K(), ops=[ast.Eq()], comparators=[ast.Constant(2)])
        if orelse:
            out.append(ast.If(test=two, body=[ast.Expr(self._rt("flip", node=node))], orelse=[]))
            out.append(
                ast.If(
                    test=ast.Compare(left=K(), ops=[ast.NotEq()], comparators=[ast.Constant(1)]), body=orelse, orelse=[]
                )
            )
        out.append(ast.If(test=two, body=[ast.Expr(self._rt("pop", node=node))], orelse=[]))
        return [ast.fix_missing_locations(ast.copy_location(o, node)) for o in out]

    def visit_While(self, node: ast.While) -> Any:
        if node.orelse:
            raise InputError(f"line {node.lineno}: while ... else is not supported in a kernel")
        test = self.visit(node.test)
        self.depth += 1
        body = self._stmts(node.body)
        self.depth -= 1
        # RT.loop_push(); while RT.loop_iter(line) and RT.loop_cond(test): body; RT.loop_pop()
        cond = ast.BoolOp(
            op=ast.And(),
            values=[
                self._rt("loop_iter", ast.Constant(node.lineno), node=node),
                self._rt("loop_cond", test, node=node),
            ],
        )
        out = [
            ast.Expr(self._rt("loop_push", node=node)),
            ast.While(test=cond, body=body or [ast.Pass()], orelse=[]),
            ast.Expr(self._rt("loop_pop", node=node)),
        ]
        return [ast.fix_missing_locations(ast.copy_location(o, node)) for o in out]

    def visit_For(self, node: ast.For) -> Any:
        it = node.iter
        is_range = isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range"
        if node.orelse:
            raise InputError(f"line {node.lineno}: for ... else is not supported in a kernel")
        if not is_range:
            # iteration over a Python sequence: uniform, an ordinary loop
            node.iter = self.visit(it)
            self.depth += 1
            node.body = self._stmts(node.body)
            self.depth -= 1
            return [self._tick(node), node]
        if not isinstance(node.target, ast.Name):
            raise InputError(f"line {node.lineno}: the loop variable of a for over range() must be a plain name")
        assert isinstance(it, ast.Call)  # is_range
        args = [self.visit(a) for a in it.args]
        itname = self._name("r")
        self.depth += 1
        body = self._stmts(node.body)
        self.depth -= 1
        out = [
            ast.Assign(
                targets=[ast.Name(id=itname, ctx=ast.Store())],
                value=self._rt("for_range", ast.Constant(node.lineno), *args, node=node),
            ),
            ast.For(target=node.target, iter=ast.Name(id=itname, ctx=ast.Load()), body=body or [ast.Pass()], orelse=[]),
            ast.Expr(self._rt("loop_pop", node=node)),
        ]
        return [ast.fix_missing_locations(ast.copy_location(o, node)) for o in out]

    def visit_With(self, node: ast.With) -> Any:
        raise InputError(f"line {node.lineno}: 'with' is not supported in a kernel")

    def visit_Try(self, node: ast.Try) -> Any:
        raise InputError(f"line {node.lineno}: 'try' is not supported in a kernel")

    # ---------------------------------------------------------------- expressions
    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if not isinstance(node.ctx, ast.Load) or isinstance(node.slice, ast.Slice):
            return self.generic_visit(node)
        return self._rt("load", self.visit(node.value), self.visit(node.slice), self._site(node, False), node=node)

    def visit_IfExp(self, node: ast.IfExp) -> Any:
        return self._rt(
            "ifexp",
            self.visit(node.test),
            self._lambda(self.visit(node.body)),
            self._lambda(self.visit(node.orelse)),
            node=node,
        )

    def visit_BoolOp(self, node: ast.BoolOp) -> Any:
        method = "land" if isinstance(node.op, ast.And) else "lor"
        values = [self.visit(v) for v in node.values]
        acc = values[0]
        for v in values[1:]:
            acc = self._rt(method, acc, self._lambda(v), node=node)
        return acc

    def visit_UnaryOp(self, node: ast.UnaryOp) -> Any:
        if isinstance(node.op, ast.Not):
            return self._rt("lnot", self.visit(node.operand), node=node)
        return self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) == 1:
            return self.generic_visit(node)
        left = self.visit(node.left)
        comps = [self.visit(c) for c in node.comparators]
        parts = []
        prev = left
        for op, c in zip(node.ops, comps):
            parts.append(ast.copy_location(ast.Compare(left=prev, ops=[op], comparators=[c]), node))
            prev = c
        acc: ast.expr = parts[0]
        for p in parts[1:]:
            acc = self._rt("land", acc, self._lambda(p), node=node)
        return acc

    def visit_Call(self, node: ast.Call) -> Any:
        visited = self.generic_visit(node)
        assert isinstance(visited, ast.Call)
        node = visited
        f = node.func
        # min / max / int / float on per-thread values: numpy's element-wise versions
        if isinstance(f, ast.Name) and f.id in ("min", "max", "int", "float", "abs") and not node.keywords:
            return self._rt("v" + f.id, *node.args, node=node)
        return node

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        raise InputError(f"line {node.lineno}: lambda is not supported in a kernel")

    def visit_ListComp(self, node: ast.ListComp) -> Any:
        # comprehensions run per element on uniform values: leave them alone
        return node


def rewrite(fn: Callable[..., Any], device: bool = False) -> Any:
    """Return (code object of the rewritten function, KernelInfo)."""
    try:
        src_lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or "<kernel>"
    except (OSError, TypeError) as e:
        raise InputError(f"cannot read the source of {getattr(fn, '__name__', fn)!r}: {e}") from None
    src = textwrap.dedent("".join(src_lines))
    tree = ast.parse(src)
    ast.increment_lineno(tree, first - 1)
    fdef = tree.body[0]
    if not isinstance(fdef, ast.FunctionDef):
        raise InputError(f"@kernel needs a function, got {type(fdef).__name__}")
    lines = {first + i: ln.rstrip("\n") for i, ln in enumerate(src_lines)}
    info = KernelInfo(fdef.name, filename, first, lines)
    rw = _Rewriter(info, device)
    new = rw.visit(fdef)
    mod = ast.Module(body=[new], type_ignores=[])
    ast.fix_missing_locations(mod)
    code = compile(mod, filename, "exec")
    return code, info
