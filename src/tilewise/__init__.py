"""tilewise: GPU kernel performance, from warps to tile sizes.

>>> import tilewise
>>> tilewise.occupancy("h100-sxm", threads=256, registers=64, static_smem=48 * 1024).blocks_per_sm
4
"""

from tilewise import gpus
from tilewise.errors import InputError
from tilewise.model.occupancy import Occupancy, occupancy
from tilewise.version import __version__

__all__ = ["InputError", "Occupancy", "__version__", "gpus", "occupancy"]
