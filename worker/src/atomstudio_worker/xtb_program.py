"""ASE calculator that runs the `xtb` program (e.g. Debian's package, version 6.5.1).

Used for GFN2/GFN1/GFN-FF only when the Python engines (tblite, gfnff) are not installed, or when a
request asks for `calculator_params.engine = "xtb"`. Molecules only: periodic input would need a
Turbomole `coord` file with `$periodic`, which this wrapper does not write.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import tempfile

import numpy as np
from ase.calculators.calculator import Calculator, CalculationFailed, all_changes
from ase.units import Bohr, Hartree

log = logging.getLogger("atomstudio_worker")

METHOD_FLAGS = {"gfn2": ["--gfn", "2"], "gfn1": ["--gfn", "1"], "gfnff": ["--gfnff"]}
# what the xtb program is given of the worker's environment: where to find things, language and
# threads; nothing else (the worker's own settings and anything secret stay out of it)
XTB_ENV_KEYS = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "XTBPATH", "XTBHOME", "OMP_NUM_THREADS",
                "OMP_STACKSIZE", "OMP_MAX_ACTIVE_LEVELS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
DEFAULT_TIMEOUT_S = 600.0


def xtb_timeout() -> float:
    """Seconds one xtb run may take (ATOMSTUDIO_XTB_TIMEOUT_S, default 600): a stuck SCF ends."""
    raw = os.environ.get("ATOMSTUDIO_XTB_TIMEOUT_S")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        value = DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def xtb_environment() -> dict[str, str]:
    env = {k: os.environ[k] for k in XTB_ENV_KEYS if k in os.environ}
    env.setdefault("OMP_NUM_THREADS", "1")
    env.setdefault("OMP_STACKSIZE", "500M")
    return env


def xtb_path() -> str | None:
    return shutil.which(os.environ.get("ATOMSTUDIO_XTB", "xtb"))


def parse_gradient(text: str, natoms: int) -> tuple[float, np.ndarray]:
    """Energy (Hartree) and gradient (Hartree/Bohr) from the last cycle of a Turbomole gradient file."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    starts = [i for i, ln in enumerate(lines) if "cycle" in ln and "energy" in ln.lower()]
    if not starts:
        raise CalculationFailed("xtb wrote no gradient")
    head = lines[starts[-1]]
    energy = float(head.split("=")[2].split()[0])
    grad_lines = lines[starts[-1] + 1 + natoms : starts[-1] + 1 + 2 * natoms]
    grad = np.array([[float(x.replace("D", "E")) for x in ln.split()[:3]] for ln in grad_lines])
    if grad.shape != (natoms, 3):
        raise CalculationFailed("xtb gradient file has an unexpected shape")
    return energy, grad


class XTBProgram(Calculator):
    implemented_properties = ["energy", "forces"]
    default_parameters = {"method": "gfn2", "charge": 0, "uhf": 0}

    def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
        super().calculate(atoms, properties, system_changes)
        exe = xtb_path()
        if exe is None:
            raise CalculationFailed("xtb program not found on PATH")
        if self.atoms.pbc.any():
            raise CalculationFailed("the xtb program wrapper handles molecules only")
        method = self.parameters["method"]
        with tempfile.TemporaryDirectory(prefix="atomstudio-xtb-") as tmp:
            xyz = os.path.join(tmp, "input.xyz")
            with open(xyz, "w") as fh:
                fh.write(f"{len(self.atoms)}\n\n")
                for s, p in zip(self.atoms.get_chemical_symbols(), self.atoms.get_positions()):
                    fh.write(f"{s} {p[0]:.12f} {p[1]:.12f} {p[2]:.12f}\n")
            cmd = [exe, "input.xyz", *METHOD_FLAGS[method], "--grad",
                   "--chrg", str(int(self.parameters["charge"])), "--uhf", str(int(self.parameters["uhf"]))]
            timeout = xtb_timeout()
            try:
                # on timeout, subprocess.run kills xtb and waits for it: no program left behind
                proc = subprocess.run(cmd, cwd=tmp, env=xtb_environment(), capture_output=True, text=True,
                                      timeout=timeout)
            except subprocess.TimeoutExpired as exc:
                raise CalculationFailed(f"xtb did not finish within {timeout:g} s (ATOMSTUDIO_XTB_TIMEOUT_S); "
                                        "it was stopped") from exc
            grad_file = os.path.join(tmp, "gradient")
            if proc.returncode != 0 or not os.path.exists(grad_file):
                # the program's last words only (the whole output goes to the worker's log)
                output = (proc.stderr or proc.stdout or "").strip()
                log.warning("xtb failed (exit %s):\n%s", proc.returncode, output[-4000:])
                last = output.splitlines()[-1][-200:] if output else "no output"
                raise CalculationFailed(f"xtb failed (exit {proc.returncode}): {last}")
            with open(grad_file) as fh:
                energy, grad = parse_gradient(fh.read(), len(self.atoms))
        self.results["energy"] = energy * Hartree
        self.results["free_energy"] = energy * Hartree
        self.results["forces"] = -grad * Hartree / Bohr
