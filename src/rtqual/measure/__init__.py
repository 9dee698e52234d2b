"""Measuring: everything that touches the host. The run and its probe sessions, the native executables,
loads, conditions, services (the EPICS IOC), the tracer, host facts and samples, the monitor and the self-test."""
