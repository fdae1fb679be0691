"""One module per explorer panel; importing this package registers them all.

Plain imports, no probing: if a model module a panel calls is broken, the explorer fails to
start and says why, rather than serving a page with that panel missing.
"""

from tilewise.web.panels import (  # noqa: F401  (imported to register)
    access,
    advisor,
    decode,
    divergence,
    hierarchy,
    l2,
    latency,
    moe,
    occupancy,
    pipeline,
    registers,
    tensorcore,
    tiling,
)
