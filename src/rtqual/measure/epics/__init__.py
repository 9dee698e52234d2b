"""rtqual's EPICS part: a real EPICS 7 IOC (from the epicscorelibs wheel) with rtqual's own
device support, run as a subprocess on loopback. env: network hygiene and free ports;
ioc: database generation, start/stop; iocmain: the IOC process itself."""
