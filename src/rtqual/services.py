"""Services: something a case needs running around its probe (today rtqual's EPICS IOC), by name.

The native table says which service a probe's cases need ("service": {"name", "run_as", "fixed", "external"}).
A service kind registers itself with register() from its own module; KNOWN says which module that is, so
nothing of a service (EPICS) is imported until a probe that needs it is built. Its factory (a second
"module:callable") is imported only when a case runs. A new service: a module that calls register(ServiceKind(...))
and one line in KNOWN.

A service object (what the factory returns) has: key (the result key for what it yields), env (the probe's
environment, or None), fill(fixed) -> {option: value} (the probe options it fills, from the table's "fixed"
macros), __call__(case_dir) -> a context manager yielding a dict (running around the probe), discard(),
and optionally temp_paths() (what it made outside the bundle, journalled so `rtqual restore` removes it after a kill).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rtqual.errors import RtqError

KNOWN = {"ioc": "rtqual.measure.epics.probes"}  # service name -> the module that registers it


@dataclass(frozen=True)
class ServiceKind:
    """A service: its own parameters (added to its probes'), how they become the spec stored in the plan,
    the labels and help of the probes run with it, and its factory (imported when a case runs)."""

    name: str
    params: dict  # {param: Field}
    spec: Callable[[dict], dict]  # full params -> the plan's service spec ({"type": name, ...})
    label: Callable[[str], Callable[[dict], str]]  # run_as -> label of a one-case run from case params
    help: Callable[[str, str], str]  # run_as, the native summary -> help line
    factory: str  # "module:callable": spec -> service object
    label_keys: tuple = ()  # params shown in an automatic scenario case label
    startup_ns: int = 0  # added to the case's estimated time


_REGISTERED: dict[str, ServiceKind] = {}


def register(kind: ServiceKind) -> None:
    """Make a service kind known by its name."""
    _REGISTERED[kind.name] = kind


def kind(name: str) -> ServiceKind:
    """The registered service kind, importing its module first if needed."""
    if name not in _REGISTERED and name in KNOWN:
        importlib.import_module(KNOWN[name])
    if name not in _REGISTERED:
        raise RtqError(f"unknown service '{name}' (known: {', '.join(sorted({*KNOWN, *_REGISTERED}))})")
    return _REGISTERED[name]


def make(spec: dict) -> Any:
    """The service object of a case's spec ({"type": name, ...}), from its kind's factory."""
    module, _, attr = kind(spec.get("type", "")).factory.partition(":")
    return getattr(importlib.import_module(module), attr)(spec)
