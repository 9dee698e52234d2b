"""The option-field model moved to rtqual.fields (loads use it too, without importing the scenario package).

This module keeps the names scenario code and others import from here.
"""

from rtqual.fields import (
    CPULIST_PATTERN,
    DURATION_PATTERN,
    FREQUENCY_PATTERN,
    MAX_CPU,
    NAME_PATTERN,
    Field,
    check,
    check_table,
    defaults_of,
    fail,
    format_khz,
    format_value,
    key_path,
    suggest,
    type_name,
    unknown_key,
)

__all__ = [
    "CPULIST_PATTERN",
    "DURATION_PATTERN",
    "FREQUENCY_PATTERN",
    "MAX_CPU",
    "NAME_PATTERN",
    "Field",
    "check",
    "check_table",
    "defaults_of",
    "fail",
    "format_khz",
    "format_value",
    "key_path",
    "suggest",
    "type_name",
    "unknown_key",
]
