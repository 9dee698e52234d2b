"""rtqual: real-time qualification of Linux hosts for control systems."""

from importlib import metadata

try:
    __version__ = metadata.version("rtqual")
except metadata.PackageNotFoundError:  # running from a source tree
    __version__ = "0+src"

SCHEMA_VERSION = 1
