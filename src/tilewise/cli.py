"""The `tilewise` command line.

Each area registers its own sub-command from a module with `register(subparsers)`;
the parsers set `func(args) -> int`. A user mistake (`InputError`) prints one line and
exits with status 2, without a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import re
import sys

from tilewise import __version__, occupancy_cli
from tilewise import gpus as _gpus
from tilewise.errors import InputError, cli_int, parse_size

# Areas whose modules add sub-commands, in the order `--help` lists them.
AREAS = [
    "tilewise.explain.cli",  # explain gemm|attention|decode|moe|ffn
    "tilewise.cli",  # gpus, occupancy (below)
    "tilewise.sim.cli",  # trace
    "tilewise.bench.cli",  # bench
    "tilewise.web.cli",  # explore
    "tilewise.advise.cli",  # advise gemm|attention|decode|grouped, advise --validate
]

EPILOG = """examples:
  tilewise explain                          the decode GEMM C[64,24576] = A[64,8192] x B[8192,24576]
  tilewise explain gemm --m 1 --json        the same at batch 1, as JSON
  tilewise gpus                             the GPU registry
  tilewise gpus h200 --json                 one GPU, every figure with its source
  tilewise occupancy --gpu h100-sxm --threads 256 --registers 64 --smem 48K
"""


# The optional extras, by the top-level package each brings (pyproject.toml's [project.optional-dependencies]).
# Every area module imports without them; a command that needs one and finds it missing says which to install.
EXTRAS = {"torch": "kernels", "triton": "kernels", "starlette": "web", "uvicorn": "web", "matplotlib": "plot"}


def missing_extra(err: ImportError) -> str | None:
    """The one-line install hint when `err` is an optional extra that is not installed, else None.

    Only a ModuleNotFoundError for the extra itself counts: a broken install (the package is there but
    one of its modules fails to import) or any other import error is a bug to show, not to hide.
    """
    name = getattr(err, "name", None) or ""
    if not isinstance(err, ModuleNotFoundError) or name not in EXTRAS:
        return None
    if importlib.util.find_spec(name) is not None:
        return None
    return f"this needs the '{name}' package: pip install 'tilewise[{EXTRAS[name]}]'"


# Dests that are positional arguments or internal: never spelled as --options.
_NOT_OPTIONS = {"command", "kind", "file", "name", "func", "json"}
# The Python name a model error uses -> the option the command line spells it with, where they differ.
_SPELLED = {"occupancy": {"dynamic_smem": "--smem", "static_smem": "--static-smem"}}


def cli_spelling(message: str, args: argparse.Namespace) -> str:
    """An InputError message with the argument it opens on named as the command line spells it.

    The Python API says "block_k must be ..."; through `tilewise explain gemm` the user typed --block-k,
    so the message says "--block-k must be ...". The opening name, name= echoes and names with an
    underscore change; other words are left alone (they may be prose)."""
    given = {k for k in vars(args) if k not in _NOT_OPTIONS and not k.startswith("_")}
    spelled = {k: "--" + k.replace("_", "-") for k in given}
    spelled.update(_SPELLED.get(getattr(args, "command", "") or "", {}))
    m = re.match(r"(\w+)(?= (must|has|is|needs|cannot|of|=))", message)
    if m and m.group(1) in spelled:
        message = spelled[m.group(1)] + message[m.end() :]
    message = re.sub(
        r"(?<![-\w])(\w+)=(?=[-\w.'])",
        lambda x: f"{spelled[x.group(1)]}=" if x.group(1) in spelled else x.group(0),
        message,
    )
    # A name with an underscore (kv_heads, max_dynamic_smem) is an identifier, never prose: spell it anywhere.
    names = {k: v for k, v in spelled.items() if "_" in k}
    names.update({k: v for k, v in _SPELLED.get(getattr(args, "command", "") or "", {}).items()})
    return re.sub(r"(?<![-\w])([a-z]\w*_\w+)\b", lambda x: names.get(x.group(1), x.group(1)), message)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="tilewise",
        description="GPU kernel performance, from warps to tile sizes.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--version", action="version", version=f"tilewise {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for area in AREAS:
        if area == "tilewise.cli":
            register(sub)
        else:  # every area ships with tilewise: an import error here is a bug and must show
            importlib.import_module(area).register(sub)
    return p


# ------------------------------------------------------------------ gpus


def _cmd_gpus(a: argparse.Namespace) -> int:
    if a.detect:
        g = _gpus.detect()
        entries = [g]
    elif a.name:
        entries = [_gpus.resolve(a.name)]
    else:
        entries = _gpus.list()
    if a.json:
        data = [g.to_dict() for g in entries]
        print(json.dumps(data[0] if (a.name or a.detect) else data, indent=2))
        return 0
    if len(entries) == 1 and (a.name or a.detect):
        print(_describe_gpu(entries[0]))
        return 0
    hdr = f"{'key':<10} {'name':<26} {'SMs':>4} {'bf16 TFLOP/s':>13} {'HBM TB/s':>9} {'balance':>8} {'L2 MB':>6} {'smem/SM':>8}"
    print(hdr)
    print("-" * len(hdr))
    for g in entries:
        print(
            f"{g.key:<10} {g.name[:26]:<26} {g.sms:>4} {_gpus.peak_flops(g, 'bf16') / 1e12:>13.1f} "
            f"{g.hbm_bytes_per_s / 1e12:>9.2f} {_gpus.balance(g, 'hbm', 'bf16'):>8.0f} {g.l2_bytes / 2**20:>6.0f} "
            f"{g.smem_per_sm // 1024:>6} KB"
        )
    print("\nbalance = dense bf16 FLOP/s per HBM byte/s. `tilewise gpus NAME` shows every figure and its source.")
    return 0


def _describe_gpu(g: _gpus.GPU) -> str:
    lines = [f"{g.name} ({g.key}), {g.arch}, compute capability {g.compute_capability[0]}.{g.compute_capability[1]}"]
    rows = [
        ("SMs", g.sms, "sms"),
        ("Tensor-Core clock (datasheet peak)", f"{g.tensor_clock_mhz:g} MHz", "tensor_clock_mhz"),
        ("max SM clock", f"{g.max_clock_mhz:g} MHz", "max_clock_mhz"),
        ("HBM", f"{g.memory_bytes / 1e9:.0f} GB at {g.hbm_bytes_per_s / 1e12:.2f} TB/s", "hbm_bytes_per_s"),
        ("L2", f"{g.l2_bytes / 2**20:.0f} MiB, ~{g.l2_bytes_per_s / 1e12:.1f} TB/s", "l2_bytes_per_s"),
        ("L1 + shared memory per SM", f"{g.l1_smem_bytes_per_sm // 1024} KB", "l1_smem_bytes_per_sm"),
        ("shared memory per SM (max carveout)", f"{g.smem_per_sm // 1024} KB", "smem_per_sm"),
        (
            "shared memory per block",
            f"{g.smem_per_block_default // 1024} KB default, {g.smem_per_block_optin // 1024} KB opt-in",
            "smem_per_block_optin",
        ),
        ("reserved per block", f"{g.reserved_smem_per_block} B", "reserved_smem_per_block"),
        ("carveouts", ", ".join(f"{c}" for c in g.smem_carveouts_kb) + " KB", "smem_carveouts_kb"),
        (
            "registers",
            f"{g.regs_per_sm:,} per SM, {g.max_regs_per_thread} per thread, unit {g.reg_alloc_unit} per warp",
            "regs_per_sm",
        ),
        ("warps / blocks per SM", f"{g.max_warps_per_sm} / {g.max_blocks_per_sm}", "max_threads_per_sm"),
        ("Tensor Cores per SM", g.tensor_cores_per_sm, "tensor_cores_per_sm"),
    ]
    for label, val, key in rows:
        lines.append(f"  {label:<38} {val!s:<40} [{g.source(key)}]")
    lines.append("  derived:")
    for dt in g.dense_macs_per_tc_per_cycle:
        lines.append(
            f"    {dt:<5} {_gpus.tensor_flops_per_cycle_per_sm(g, dt):>6} FLOPs/cycle/SM  "
            f"{_gpus.peak_flops(g, dt) / 1e12:8.1f} TFLOP/s dense"
        )
    for lvl in _gpus.LEVELS:
        lines.append(
            f"    {lvl:<5} {_gpus.bandwidth(g, lvl) / 1e12:6.1f} TB/s   balance {_gpus.balance(g, lvl, 'bf16'):7.1f} FLOP/B (bf16)"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------ occupancy


def _cmd_occupancy(a: argparse.Namespace) -> int:
    return occupancy_cli.run(a)


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    g = sub.add_parser(
        "gpus",
        help="list the GPU registry, or show one GPU with the source of every figure",
        description="The GPU registry. Every figure names its source; derived figures are computed.",
        epilog="examples:\n  tilewise gpus\n  tilewise gpus h200\n  tilewise gpus h100 --json\n  tilewise gpus --detect",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    g.add_argument(
        "name", nargs="?", help="a registry key or alias (h100-sxm, h200, l40s, ...) or a GPU file (.toml/.json)"
    )
    g.add_argument("--json", action="store_true", help="print JSON")
    g.add_argument("--detect", action="store_true", help="read the live device through torch/CUDA")
    g.set_defaults(func=_cmd_gpus)

    o = sub.add_parser(
        "occupancy",
        help="blocks per SM and the binding limit, exactly as the CUDA runtime computes it",
        description=(
            "Occupancy of one kernel configuration: the four limits (warps, registers, shared memory, blocks) "
            "plus Hopper's barrier limit, the binding one, and what-if tables as block size, registers and "
            "shared memory vary."
        ),
        epilog=(
            "examples:\n  tilewise occupancy --gpu h100-sxm --threads 256 --registers 64 --smem 48K\n"
            "  tilewise occupancy --threads 384 --registers 168 --smem 200K --json\n"
            "  tilewise occupancy --threads 128 --registers 32 --plot occ.png"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    o.add_argument(
        "--gpu",
        default=_gpus.DEFAULT_GPU,
        help=f"registry name or a GPU file (.toml/.json) (default {_gpus.DEFAULT_GPU})",
    )
    o.add_argument("--threads", type=cli_int, required=True, help="threads per block")
    o.add_argument("--registers", type=cli_int, required=True, help="registers per thread (ptxas -v)")
    o.add_argument("--smem", default="0", help="shared memory per block, static + dynamic (e.g. 48K)")
    o.add_argument("--static-smem", default=None, help="the static part of --smem (at most 48K)")
    o.add_argument("--carveout", type=cli_int, default=None, help="preferred shared-memory carveout, percent 0-100")
    o.add_argument("--max-dynamic-smem", default=None, help="cudaFuncAttributeMaxDynamicSharedMemorySize")
    o.add_argument("--barriers", type=cli_int, default=1, help="named barriers the kernel uses (default 1)")
    o.add_argument("--json", action="store_true", help="print JSON")
    o.add_argument("--plot", metavar="FILE", help="draw the three what-if graphs to FILE (png/svg)")
    o.set_defaults(func=_cmd_occupancy)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 0
    try:
        gpu = getattr(args, "gpu", None)
        if isinstance(gpu, str) and _gpus.is_file(
            gpu
        ):  # --gpu my.toml: a user's GPU file, through every command that takes a GPU
            args.gpu = _gpus.load(gpu).key
        return int(args.func(args) or 0)
    except InputError as e:
        print(f"tilewise: error: {cli_spelling(str(e), args)}", file=sys.stderr)
        return 2
    except ImportError as e:
        hint = missing_extra(e)
        if hint is None:
            raise
        print(f"tilewise: error: {hint}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


__all__ = ["build_parser", "main", "parse_size"]

if __name__ == "__main__":
    raise SystemExit(main())
