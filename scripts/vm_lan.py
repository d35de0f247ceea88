#!/usr/bin/env python3
"""A LAN for the VM test's board, in a network namespace of its own (nothing of it
reaches the host's networks): QEMU's second NIC (`-netdev socket,udp=…`: one Ethernet
frame per datagram on 127.0.0.1) is bridged to a TAP device `lan0` (10.78.0.1/24) in a
new namespace, where Debian's dnsmasq gives the board its address by DHCP and the tests'
ONVIF clients (WSDiscovery, onvif-zeep) find and question it as they would on a LAN.

  vm_lan.py QEMU_PORT HELPER_PORT PYTHON CLIENT

QEMU sends to HELPER_PORT and listens on QEMU_PORT. Commands on stdin, one a line:
`lease` (waits for the board's DHCP lease and prints its address), `probe` (a multicast
WS-Discovery probe on the LAN), `camera USER PASS` (onvif-zeep at the leased address),
`mdns NAME` (python-zeroconf asks for NAME.local and its services); each answered by one
JSON line. The namespace ends with the process.
"""
import ctypes
import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time

CLONE_NEWNET = 0x40000000
TUNSETIFF = 0x400454CA
IFF_TAP, IFF_NO_PI = 0x0002, 0x1000


def main():
    qemu_port, helper_port, python, client = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    # The socket to QEMU is made in the host's namespace, before leaving it: a socket
    # stays in the namespace it was made in.
    wire = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    wire.bind(("127.0.0.1", helper_port))
    if ctypes.CDLL(None, use_errno=True).unshare(CLONE_NEWNET) != 0:
        raise SystemExit("unshare(CLONE_NEWNET): " + os.strerror(ctypes.get_errno()))
    tap = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(tap, TUNSETIFF, struct.pack("16sH", b"lan0", IFF_TAP | IFF_NO_PI))
    for command in (["ip", "link", "set", "lo", "up"], ["ip", "addr", "add", "10.78.0.1/24", "dev", "lan0"],
                    ["ip", "link", "set", "lan0", "up"]):
        subprocess.run(command, check=True)
    leases = "/tmp/vm-lan-%d.leases" % os.getpid()
    dnsmasq = subprocess.Popen(["dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null", "--port=0", "--interface=lan0",
                                "--bind-interfaces", "--dhcp-range=10.78.0.10,10.78.0.50,255.255.255.0,1h",
                                "--dhcp-leasefile=" + leases, "--dhcp-authoritative", "--log-facility=-",
                                # No router and no DNS server: the LAN is only for finding the board.
                                "--dhcp-option=3", "--dhcp-option=6"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def bridge():
        while True:
            ready, _, _ = select.select([wire, tap], [], [])
            if wire in ready:
                frame = wire.recv(65536)
                os.write(tap, frame)
            if tap in ready:
                frame = os.read(tap, 65536)
                wire.sendto(frame, ("127.0.0.1", qemu_port))

    threading.Thread(target=bridge, daemon=True).start()
    address = None
    try:
        for line in sys.stdin:
            words = line.split()
            if not words:
                continue
            if words[0] == "lease":
                address = lease(leases, timeout=float(words[1]) if len(words) > 1 else 120)
                answer({"address": address})
            elif words[0] == "probe":
                answer(run_client(python, client, ["discover-multicast"]))
            elif words[0] == "camera":
                answer(run_client(python, client, ["camera", address or "10.78.0.10", "8080"] + words[1:]))
            elif words[0] == "mdns" and len(words) == 2:
                answer(run_client(python, os.path.join(os.path.dirname(client), "mdns_client.py"), [words[1]]))
    finally:
        dnsmasq.terminate()
        dnsmasq.wait()
        if os.path.exists(leases):
            os.unlink(leases)


def lease(path, timeout):
    """The first address dnsmasq leased (its lease file: `expiry mac ip name id`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(path):
            with open(path) as f:
                for entry in f:
                    fields = entry.split()
                    if len(fields) >= 3:
                        return fields[2]
        time.sleep(0.5)
    return None


def run_client(python, client, arguments):
    done = subprocess.run([python, client] + arguments, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "no answer: " + done.stdout + done.stderr}


def answer(value):
    print(json.dumps(value), flush=True)


main()
