"""Support code the tests share, written once: processes, ports, services, the pixel decoder."""
