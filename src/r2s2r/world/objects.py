"""The object catalog (the CAD): shapes, sizes and colours of the objects the cell sorts.

Known objects appear in real demonstrations; novel objects differ in shape or size and appear
only under the ``novel_object`` condition. Sizes are MuJoCo geom sizes (half-extents for boxes,
radius and half-height for cylinders/capsules, radius for spheres, semi-axes for ellipsoids), m.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

NOMINAL_DENSITY = 800.0  # kg/m^3, the "default density" of the spec sheet
COLOR_RGBA = {"red": (0.85, 0.12, 0.10, 1.0), "blue": (0.10, 0.25, 0.85, 1.0)}


@dataclass(frozen=True)
class CatalogObject:
    name: str
    shape: str  # "box" | "cylinder" | "sphere" | "capsule" | "ellipsoid"
    size: tuple[float, ...]
    color: str  # "red" | "blue": decides the bin
    novel: bool = False

    @property
    def volume(self) -> float:
        s = self.size
        if self.shape == "box":
            return 8 * s[0] * s[1] * s[2]
        if self.shape == "cylinder":
            return math.pi * s[0] ** 2 * 2 * s[1]
        if self.shape == "sphere":
            return 4 / 3 * math.pi * s[0] ** 3
        if self.shape == "capsule":
            return math.pi * s[0] ** 2 * 2 * s[1] + 4 / 3 * math.pi * s[0] ** 3
        if self.shape == "ellipsoid":
            return 4 / 3 * math.pi * s[0] * s[1] * s[2]
        raise ValueError(self.shape)

    @property
    def nominal_mass(self) -> float:
        return NOMINAL_DENSITY * self.volume

    @property
    def rest_height(self) -> float:
        """Height of the object's centre above a flat surface it rests on (upright), m."""
        s = self.size
        if self.shape in ("box", "cylinder"):
            return s[-1] if self.shape == "box" else s[1]
        if self.shape == "sphere":
            return s[0]
        if self.shape == "capsule":  # lies on its side
            return s[0]
        return s[2]

    @property
    def extent(self) -> float:
        """Largest dimension (m): the size class used to scale the hand's pre-shape."""
        s = self.size
        if self.shape == "box":
            return 2 * max(s)
        if self.shape == "cylinder":
            return 2 * max(s)
        if self.shape == "capsule":
            return 2 * (s[0] + s[1])
        return 2 * max(s)


_OBJECTS = (
    CatalogObject("red_cube", "box", (0.025, 0.025, 0.025), "red"),
    CatalogObject("blue_cube", "box", (0.025, 0.025, 0.025), "blue"),
    CatalogObject("red_cylinder", "cylinder", (0.0275, 0.0325), "red"),
    CatalogObject("blue_cylinder", "cylinder", (0.0275, 0.0325), "blue"),
    CatalogObject("red_sphere", "sphere", (0.03,), "red"),
    CatalogObject("blue_sphere", "sphere", (0.03,), "blue"),
    CatalogObject("red_cube_large", "box", (0.035, 0.035, 0.035), "red"),
    CatalogObject("blue_cube_small", "box", (0.0225, 0.0225, 0.0225), "blue"),
    # Novel: other shapes and sizes, same colours.
    CatalogObject("red_capsule", "capsule", (0.022, 0.025), "red", novel=True),
    CatalogObject("blue_bar", "box", (0.04, 0.016, 0.016), "blue", novel=True),
    CatalogObject("red_ellipsoid", "ellipsoid", (0.035, 0.025, 0.022), "red", novel=True),
    CatalogObject("blue_puck", "cylinder", (0.035, 0.016), "blue", novel=True),
)
CATALOG: dict[str, CatalogObject] = {o.name: o for o in _OBJECTS}
KNOWN_OBJECTS: tuple[str, ...] = tuple(o.name for o in _OBJECTS if not o.novel)
NOVEL_OBJECTS: tuple[str, ...] = tuple(o.name for o in _OBJECTS if o.novel)
