#!/usr/bin/env python3
"""ONVIF as NVRs and hubs speak it, from PyPI's clients (the tests' real clients):

  onvif_client.py discover HOST PORT [SOURCE] a directed WS-Discovery probe (WSDiscovery),
                                               from the local address SOURCE if given
  onvif_client.py discover-multicast           a multicast probe on every interface
  onvif_client.py camera HOST PORT USER PASS [text]
                                               onvif-zeep: device information, profiles,
                                               the stream and snapshot URIs, and the
                                               snapshot itself (HTTP Digest, as NVRs fetch
                                               it); `text`: PasswordText, not PasswordDigest

Prints one JSON object; a client that fails prints {"error": ...} and exits 1.
"""
import json
import sys


def described(s):
    return {"epr": s.getEPR(), "xaddrs": list(s.getXAddrs()), "scopes": [str(x) for x in s.getScopes()],
            "types": [str(t) for t in s.getTypes()]}


def discover():
    from wsdiscovery.discovery import ThreadedWSDiscovery
    wsd = ThreadedWSDiscovery()
    wsd.start()
    try:
        return {"services": [described(s) for s in wsd.searchServices(timeout=3)]}
    finally:
        wsd.stop()


def discover_directed(address, port, source=None):
    """A Probe sent straight to the device, its ProbeMatches read from the same socket:
    WSDiscovery's own directed mode sends from a socket it never reads (2.1.2), so its
    message builder and parser are used here around a plain UDP socket."""
    import socket
    from wsdiscovery.actions import constructProbe
    from wsdiscovery.message import createSOAPMessage, parseSOAPMessage
    probe = constructProbe([], [])
    message = createSOAPMessage(probe)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.settimeout(3)
        if source:
            sock.bind((source, 0))
        sock.sendto(message.encode() if isinstance(message, str) else message, (address, port))
        data, sender = sock.recvfrom(65536)
    env = parseSOAPMessage(data, sender[0])
    return {"services": [described(m) for m in env.getProbeResolveMatches()], "relates_to": env.getRelatesTo() == probe.getMessageId()}


def camera(host, port, user, password, mode="digest"):
    from onvif import ONVIFCamera
    cam = ONVIFCamera(host, int(port), user, password, encrypt=(mode != "text"))
    info = cam.devicemgmt.GetDeviceInformation()
    clock = cam.devicemgmt.GetSystemDateAndTime()
    media = cam.create_media_service()
    profiles = media.GetProfiles()
    token = profiles[0].token
    stream = media.GetStreamUri({"StreamSetup": {"Stream": "RTP-Unicast", "Transport": {"Protocol": "RTSP"}}, "ProfileToken": token})
    snapshot = media.GetSnapshotUri({"ProfileToken": token})
    encoder = profiles[0].VideoEncoderConfiguration
    return {"manufacturer": info.Manufacturer, "model": info.Model, "firmware": info.FirmwareVersion,
            "clock": clock.DateTimeType, "profiles": [p.token for p in profiles],
            "encoding": encoder.Encoding, "width": encoder.Resolution.Width, "height": encoder.Resolution.Height,
            "stream": stream.Uri, "snapshot": snapshot.Uri, "jpeg": fetch_jpeg(snapshot.Uri, user, password)}


def fetch_jpeg(uri, user, password):
    """The snapshot's first bytes as hex and its size, fetched as NVRs do (requests,
    which zeep uses, with Digest); a board that asks for no user ignores it."""
    import requests
    from requests.auth import HTTPDigestAuth
    for _ in range(50):
        reply = requests.get(uri, auth=HTTPDigestAuth(user, password), timeout=10)
        if reply.status_code != 503:
            break
        import time
        time.sleep(0.1)
    return {"status": reply.status_code, "start": reply.content[:3].hex(), "size": len(reply.content)}


def main():
    command, args = sys.argv[1], sys.argv[2:]
    try:
        if command == "discover":
            result = discover_directed(args[0], int(args[1]), *args[2:3])
        elif command == "discover-multicast":
            result = discover()
        elif command == "camera":
            result = camera(*args)
        else:
            raise SystemExit("unknown command " + command)
    except Exception as error:  # the client's own exception, said as it said it
        print(json.dumps({"error": type(error).__name__ + ": " + str(error)}))
        sys.exit(1)
    print(json.dumps(result))


main()
