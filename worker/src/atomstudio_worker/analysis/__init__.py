"""The analysis worker: VASP and LOBSTER outputs read by pymatgen and lobsterpy in a warm process.

It speaks the calculator worker's JSON-lines protocol (worker/PROTOCOL.md, "Analysis worker").
Each method is one module in `methods/` (see `methods/__init__.py`); files arrive by sha256 and
parsed objects are cached by it, so a second request on the same files does not parse again.
"""
