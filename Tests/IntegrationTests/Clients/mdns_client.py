#!/usr/bin/env python3
"""Finding a board by name on its LAN, as a phone or a laptop does, with python-zeroconf
(PyPI): multicast DNS (RFC 6762) and DNS-SD (RFC 6763).

  mdns_client.py NAME    NAME.local's IPv4 addresses, and the `_http._tcp` and
                         `_rtsp._tcp` services named NAME: their host, port and TXT

Prints one JSON object; a client that fails prints {"error": ...} and exits 1.
"""
import json
import sys


def main():
    from zeroconf import AddressResolver, IPVersion, Zeroconf
    name = sys.argv[1]
    zc = Zeroconf(ip_version=IPVersion.V4Only)
    try:
        resolver = AddressResolver(f"{name}.local.")
        resolver.request(zc, 3000)
        found = {"addresses": resolver.parsed_addresses(IPVersion.V4Only), "services": {}}
        for kind in ("_http._tcp", "_rtsp._tcp"):
            info = zc.get_service_info(f"{kind}.local.", f"{name}.{kind}.local.", timeout=3000)
            if info:
                found["services"][kind] = {"server": info.server, "port": info.port,
                                           "txt": {k.decode(): (v or b"").decode() for k, v in info.properties.items()}}
        print(json.dumps(found))
    finally:
        zc.close()


try:
    main()
except Exception as error:  # one line for the test, whatever failed
    print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
    sys.exit(1)
