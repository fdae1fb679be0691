"""Dump the live device's properties (torch and CuPy) as JSON: the source of the H200 registry figures."""

import json
import sys

import torch

out = {}
p = torch.cuda.get_device_properties(0)
out["torch"] = {
    k: getattr(p, k) for k in dir(p) if not k.startswith("_") and isinstance(getattr(p, k), (int, str, float))
}
try:
    import cupy

    cp = cupy.cuda.runtime.getDeviceProperties(0)
    out["cupy"] = {
        k: (v.decode() if isinstance(v, bytes) else v) for k, v in cp.items() if isinstance(v, (int, float, bytes, str))
    }
except Exception as e:
    out["cupy_error"] = repr(e)
out["versions"] = {"torch": torch.__version__}
json.dump(out, open(sys.argv[1], "w"), indent=1, default=str)
print(json.dumps(out["torch"], default=str)[:2000])
