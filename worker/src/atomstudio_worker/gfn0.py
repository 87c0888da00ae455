"""GFN0-xTB through the xtb Python API (PyPI package `xtb`, which bundles libxtb 6.5.1).

tblite and dxtb have no GFN0, and Debian's `xtb` program 6.5.1 aborts on `--gfn 0` for molecules
(generate_wsc.f90). The same library called through its C API works for molecules, but needs the
parameter file `param_gfn0-xtb.txt`, which the wheel does not contain: it is looked up in XTBPATH
and in /usr/share/xtb, where Debian's `xtb` package installs it.
Molecules only: the periodic GFN0 path was not verified here (see README).
"""

from __future__ import annotations

import os

import numpy as np
from ase.calculators.calculator import Calculator, all_changes
from ase.units import Bohr, Hartree

PARAM_FILE = "param_gfn0-xtb.txt"
# Debian's xtb package puts its parameter files here; a standard location, not this machine's
SYSTEM_PARAM_DIRS = ("/usr/share/xtb",)


def param_dir() -> str | None:
    dirs = [d for d in os.environ.get("XTBPATH", "").split(os.pathsep) if d] + list(SYSTEM_PARAM_DIRS)
    for d in dirs:
        if os.path.isfile(os.path.join(d, PARAM_FILE)):
            return d
    return None


class GFN0(Calculator):
    implemented_properties = ["energy", "forces"]
    default_parameters = {"charge": 0, "uhf": 0, "accuracy": None, "electronic_temperature": None}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._xtb = None
        self._numbers = None
        self._res = None

    def reset(self):
        super().reset()
        self._xtb = None
        self._numbers = None
        self._res = None

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        from xtb.interface import Calculator as XTBCalculator
        from xtb.interface import Param
        from xtb.libxtb import VERBOSITY_MUTED

        positions = self.atoms.get_positions() / Bohr
        numbers = self.atoms.get_atomic_numbers()
        if self._xtb is None or not np.array_equal(numbers, self._numbers):
            pdir = param_dir()
            if pdir is None:
                raise RuntimeError(f"{PARAM_FILE} not found (XTBPATH or /usr/share/xtb)")
            # libxtb reads XTBPATH when it loads the parametrisation
            if pdir not in os.environ.get("XTBPATH", "").split(os.pathsep):
                os.environ["XTBPATH"] = os.pathsep.join(p for p in (os.environ.get("XTBPATH"), pdir) if p)
            calc = XTBCalculator(Param.GFN0xTB, numbers, positions,
                                 charge=float(self.parameters["charge"]), uhf=int(self.parameters["uhf"]))
            calc.set_verbosity(VERBOSITY_MUTED)
            if self.parameters["accuracy"] is not None:
                calc.set_accuracy(float(self.parameters["accuracy"]))
            if self.parameters["electronic_temperature"] is not None:
                calc.set_electronic_temperature(float(self.parameters["electronic_temperature"]))
            self._xtb, self._numbers, self._res = calc, numbers.copy(), None
        else:
            self._xtb.update(positions)
        self._res = self._xtb.singlepoint(self._res)
        energy = self._res.get_energy() * Hartree
        self.results["energy"] = energy
        self.results["free_energy"] = energy
        self.results["forces"] = -self._res.get_gradient() * Hartree / Bohr
