"""AtomStudio calculator worker (see PROTOCOL.md)."""

__version__ = "0.1.0"
PROTOCOL_VERSION = 1
