"""Write a large line-mode vasprun.xml (+ its KPOINTS) for the analysis benchmark, derived from
the shared Si band file: the same cell, header and DOS, with N k-points per segment of the same
FCC path, NBANDS bands and projected eigenvalues (2 spins, 2 ions, 9 orbitals). The eigenvalues
are smooth synthetic bands with a gap at 0 eV; the file only has to be real VASP XML of that
size for pymatgen and the service to parse.

usage: make_large_vasprun.py SI_BANDS.xml.gz KPOINTS OUT_DIR [points_per_segment] [nbands]
"""

from __future__ import annotations

import gzip
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

src, kpoints_src, out_dir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
per_segment = int(sys.argv[4]) if len(sys.argv) > 4 else 72
nbands = int(sys.argv[5]) if len(sys.argv) > 5 else 200
out_dir.mkdir(parents=True, exist_ok=True)

# the path: pairs of (start, end) from the line-mode KPOINTS
lines = kpoints_src.read_text().splitlines()
corners = [[float(x) for x in ln.split("!")[0].split()[:3]] for ln in lines[4:] if ln.strip() and "!" in ln]
segments = list(zip(corners[0::2], corners[1::2]))
kpts = [[a[i] + (b[i] - a[i]) * t / (per_segment - 1) for i in range(3)] for a, b in segments for t in range(per_segment)]
nk = len(kpts)
lines[1] = f"{per_segment}   ! {per_segment} grids"
(out_dir / "KPOINTS").write_text("\n".join(lines) + "\n")

tree = ET.parse(gzip.open(src))
root = tree.getroot()


def rows(parent: ET.Element, tag: str, values: list[str]) -> None:
    for child in list(parent):
        parent.remove(child)
    for v in values:
        e = ET.SubElement(parent, tag)
        e.text = v


kp = root.find("kpoints")
for i in kp.iter("i"):
    if i.get("name") == "divisions":
        i.text = str(per_segment)
rows(kp.find("varray[@name='kpointlist']"), "v", [f" {a:.8f} {b:.8f} {c:.8f} " for a, b, c in kpts])
rows(kp.find("varray[@name='weights']"), "v", [f" {1 / nk:.8f} "] * nk)
for section in (root.find("incar"), root.find("parameters")):
    for i in section.iter("i"):
        if i.get("name") == "NBANDS":
            i.text = f" {nbands} "


def energy(spin: int, band: int, k: int) -> float:
    # valence bands below E_F = 5.856 eV, conduction bands above, dispersing along the path
    base = 5.856 + (band - nbands // 2 + 0.5) * 0.35 + (0.3 if band >= nbands // 2 else -0.3)
    return base + 0.25 * math.sin(0.05 * k * (1 + band % 7) + spin)


calc = root.findall("calculation")[-1]
eig = calc.find("eigenvalues/array/set")
for s_idx, spin_set in enumerate(eig.findall("set")):
    for child in list(spin_set):
        spin_set.remove(child)
    for k in range(nk):
        kset = ET.SubElement(spin_set, "set", comment=f"kpoint {k + 1}")
        for b in range(nbands):
            r = ET.SubElement(kset, "r")
            r.text = f" {energy(s_idx, b, k):9.4f} {1.0 if b < nbands // 2 else 0.0:7.4f} "

proj = calc.find("projected")
peig = proj.find("eigenvalues/array/set")
for s_idx, spin_set in enumerate(peig.findall("set")):
    for child in list(spin_set):
        spin_set.remove(child)
    for k in range(nk):
        kset = ET.SubElement(spin_set, "set", comment=f"kpoint {k + 1}")
        for b in range(nbands):
            r = ET.SubElement(kset, "r")
            r.text = f" {energy(s_idx, b, k):9.4f} {1.0 if b < nbands // 2 else 0.0:7.4f} "
pset = proj.find("array/set")
for s_idx, spin_set in enumerate(pset.findall("set")):
    for child in list(spin_set):
        spin_set.remove(child)
    for k in range(nk):
        kset = ET.SubElement(spin_set, "set", comment=f"kpoint {k + 1}")
        for b in range(nbands):
            bset = ET.SubElement(kset, "set", comment=f"band {b + 1}")
            for ion in range(2):
                w = [0.5 * abs(math.sin(0.1 * (k + b + ion + o))) for o in range(9)]
                r = ET.SubElement(bset, "r")
                r.text = " " + " ".join(f"{x:6.4f}" for x in w) + " "

out = out_dir / "vasprun.xml"
tree.write(out, encoding="ISO-8859-1", xml_declaration=True)
print(f"{out} {out.stat().st_size / 2**20:.1f} MiB, {nk} k-points, {nbands} bands")
