"""make vm-test, scenario 10 (qemu-x86_64, boot 3): the board joins Wi-Fi from onair.conf.

The radios are there at power-on, as a Pi's is: onair-test-wifi.service (board/qemu-x86_64,
asked for by the files boot_files() puts on the FAT) loads mac80211_hwsim with three
radios and moves the second into a network namespace, the "home router": hostapd serving
WPA2/WPA3 (transition mode, so the board's `security = auto` takes WPA3-SAE) and busybox's
udhcpd; the third is the phone of scenario 11. The board's own radio is wlan0: udev starts
onair-wifi@wlan0, `onair wifi-config` writes wpa_supplicant's configuration from the
[wifi] the test wrote into onair.conf on the FAT partition, wpa_supplicant joins,
systemd-networkd takes a lease, and onair says so on the console; the time from power-on
to that address is measured (the kernel's start on the host's clock, the rest from the
journal). A client in the router's namespace (busybox wget) then reads the board's
/api/status and plays its live stream's playlist and first segment over the radio (timed
from the button). Then, under WPA2 alone and under WPA3 alone (hostapd again), the
router's password changes: each time the board leaves and says in words that its password
is wrong, and with the right password joins again on that security.
"""
import json
import re
import time

import vm_setup

SSID = "onair test home"
PASSWORD = "correct horse # battery"  # a '#', written in quotes in onair.conf
ROUTER = "192.168.77.1"

HOSTAPD = """interface=wlan1
driver=nl80211
ssid={ssid}
hw_mode=g
channel=6
wpa=2
wpa_key_mgmt={key_mgmt}
rsn_pairwise=CCMP
ieee80211w={mfp}
wpa_passphrase={password}
ctrl_interface=/run/hostapd
"""

UDHCPD = """start 192.168.77.100
end 192.168.77.150
interface wlan1
lease_file /run/udhcpd.leases
option subnet 255.255.255.0
option router 192.168.77.1
"""


def boot_files():
    """The files the test puts on the FAT for onair-test-wifi.service (board/qemu-x86_64):
    the router's hostapd (WPA2 and WPA3-SAE) and DHCP server."""
    return {"test-wifi-hostapd.conf": HOSTAPD.format(ssid=SSID, password=PASSWORD, key_mgmt="WPA-PSK SAE", mfp=1),
            "test-wifi-udhcpd.conf": UDHCPD}


def config_section():
    """What the test adds to the owner's onair.conf: the Wi-Fi, and the cable's address
    fixed at the one QEMU's user network would give it by DHCP (the host reaches the
    board there, and it publishes through 10.0.2.2); enp0s3 is that network's NIC, the
    other is the LAN of scenario 11 of boot 1."""
    return (f'\n[wifi]\nssid = {SSID}\npassword = "{PASSWORD}"\ncountry = GB\n'
            '\n[network]\naddress = 10.0.2.15/24\ngateway = 10.0.2.2\ndns = 10.0.2.3\nlink = wired\ninterface = enp0s3\n')


def check_fixed_address(t, run):
    """[network]'s address on the cable: networkd configured it from onair's file, with
    no DHCP lease; the Wi-Fi keeps DHCP."""
    ok, output = run("cat /run/systemd/network/15-onair-static.network; networkctl status --no-pager enp0s3")
    t.check("10 network: [network]'s fixed address is on the cable (onair network-config → systemd-networkd), without DHCP",
            ok and "Address=10.0.2.15/24" in output and "15-onair-static.network" in output
            and "10.0.2.15" in output and "DHCP4" not in output, output[-1500:])


def scenario(t, machine, timings):
    shell = machine.shell
    mark = 0  # the board joined as it booted

    def run(command, timeout=60):
        status, output = shell.run(command, timeout=timeout)
        if status != 0:
            t.say(f"10 wifi: `{command}` → {status}: {output[-400:]}")
        return status == 0, output

    def router(command, timeout=60):
        return run(f"nsenter --net=/run/netns/router {command}", timeout)

    # The radios and the router came up at power-on (onair-test-wifi.service, from the
    # files boot_files() put on the FAT), as a Pi's radio and a home router are there.
    # (`start` waits for the unit when it is still coming up; busybox's udhcpd is found by
    # its port, its process being named busybox.)
    ok, said = run("systemctl start onair-test-wifi && nsenter --net=/run/netns/router sh -c 'pidof hostapd && busybox netstat -uln | grep -q :67'"
                   " && nsenter --net=/run/netns/phone iw dev")
    if not t.check("10 wifi: three radios at power-on (mac80211_hwsim), the second a home router's (hostapd WPA2/WPA3, udhcpd) in a namespace, the third a phone's",
                   ok and "wlan2" in said, said[-600:]):
        _, journal = run("journalctl -b -u onair-test-wifi --no-pager | tail -20")
        t.say(journal)
        return
    joined = machine.wait_for(r"onair: wifi\.joined[^\n]*", 180, mark)
    address = machine.wait_for(r"onair: wifi\.address [^\n]*address=(\d+\.\d+\.\d+\.\d+)", 120, mark)
    t.check("10 wifi: the board joins the network of onair.conf's [wifi] and says so on the console",
            joined and SSID in joined.group(0),
            joined.group(0) if joined else machine.text()[mark:][-1500:])
    if not t.check("10 wifi: ... and the address the router gave it (DHCP)", address, machine.text()[mark:][-1000:]):
        _, journal = run("journalctl -b -u 'onair-wifi@*' --no-pager | tail -30; networkctl status wlan0 --no-pager | head -20")
        t.say(journal)
        return
    # From power-on: when the guest's kernel started, on the host's clock (its uptime read
    # through the shell, halfway through the round trip), then the kernel's clock at the
    # journal's line.
    asked = time.monotonic()
    _, said = run("cat /proc/uptime; journalctl -b -o short-monotonic --no-pager -u onair | grep -m1 'wifi.address'")
    answered = time.monotonic()
    uptime = re.search(r"^(\d+\.\d+) ", said, re.M)
    at = re.search(r"^\[\s*(\d+\.\d+)\]", said, re.M)
    if uptime and at:
        kernel_started = (asked + answered) / 2 - float(uptime.group(1))
        timings["power-on to an address over Wi-Fi (s)"] = round(kernel_started - machine.started + float(at.group(1)), 1)
    else:
        t.say(f"10 wifi: no power-on time: {said[-300:]}")
    check_fixed_address(t, run)
    board = address.group(1)
    _, status = run("wpa_cli -i wlan0 status")
    key_mgmt = re.search(r"key_mgmt=(\S+)", status)
    t.check("10 wifi: security = auto took WPA3 (SAE) where the router offers it", key_mgmt and key_mgmt.group(1) == "SAE", status)

    ok, body = router(f"busybox wget -q -O - http://{board}:8080/api/status")
    try:
        wifi = json.loads(body[body.index("{"):]).get("wifi") or {}
    except ValueError:
        wifi = {}
    t.check("10 wifi: a client on the router's network reads /api/status over the radio; it says joined, the network and the address",
            wifi.get("state") == "joined" and wifi.get("ssid") == SSID and wifi.get("address") == board, body[-600:])
    line = machine.wait_for(r"onair: \S+ [^\n]* wifi=joined\((\d+\.\d+\.\d+\.\d+)\)[^\n]*", 30, mark)
    t.check("10 wifi: the console's status line says wifi=joined with the address", line, machine.text()[-600:])
    check_play(t, machine, router, board, timings)

    # Under WPA2 alone (its 4-way handshake) and WPA3 alone (SAE's confirm), the router's
    # password changes: the board leaves and says why, in words; the right password, and it
    # is back, on that security.
    for security, key_mgmt, mfp, expected in (("WPA2", "WPA-PSK", 0, "WPA2-PSK"), ("WPA3", "SAE", 2, "SAE")):
        mark = len(machine.text())
        ok = restart_router(run, router, key_mgmt, mfp, "another password entirely")
        # While hostapd restarts the network is briefly not in range: the board may say so
        # first, then that the password is wrong.
        failed = machine.wait_for(r"onair: wifi\.failed [^\n]*kind=wrong-password[^\n]*", 180, mark)
        t.check(f"10 wifi: the router's password changed ({security} alone): the console says the password is wrong, in words",
                ok and failed and "kind=wrong-password" in failed.group(0) and "wrong password for" in failed.group(0),
                failed.group(0) if failed else machine.text()[mark:][-1500:])
        try:
            wifi = t.http_json("/api/status").get("wifi") or {}
        except (OSError, ValueError):
            wifi = {}
        t.check(f"10 wifi: ... /api/status says so too ({security})",
                wifi.get("state") == "failed" and "wrong password" in (wifi.get("problem") or ""), str(wifi))
        mark = len(machine.text())
        ok = restart_router(run, router, key_mgmt, mfp, PASSWORD)
        back = machine.wait_for(r"onair: wifi\.joined[^\n]*", 180, mark)
        _, status = run("wpa_cli -i wlan0 status")
        t.check(f"10 wifi: the right password again ({security} alone): the board joins, with {security}",
                ok and back and f"key_mgmt={expected}" in status, status[-400:])
    t.check("10 wifi: the password was never shown on the console", PASSWORD not in machine.text() and "correct horse" not in machine.text())
    vm_setup.scenario(t, machine, run, router, timings)


def restart_router(run, router, key_mgmt, mfp, password):
    """hostapd again, with other security or another password."""
    ok = router("sh -c 'kill $(cat /run/hostapd.pid)'")[0]
    hostapd = HOSTAPD.format(ssid=SSID, password=password, key_mgmt=key_mgmt, mfp=mfp)
    ok = ok and run(f"sleep 1; cat > /run/hostapd.conf <<'EOF'\n{hostapd}EOF")[0]
    return ok and router("hostapd -B -P /run/hostapd.pid /run/hostapd.conf")[0]


def check_play(t, machine, router, board, timings):
    """A stream started by the button is played from the router's namespace: its live
    playlist, and the first segment it names."""
    mark = len(machine.text())
    machine.key("spc")
    pressed = time.monotonic()
    started = machine.wait_for(r"onair: stream\.started id=(\S+)", 30, mark)
    if not t.check("10 wifi: the space bar starts a stream", started):
        return
    stream = started.group(1)
    # Until the playlist names a whole segment (a busy machine takes longer than usual).
    deadline = time.monotonic() + 60
    segment = None
    while segment is None and time.monotonic() < deadline:
        time.sleep(2)
        ok, playlist = router(f"busybox wget -q -O - http://{board}:8080/streams/{stream}/playlist.m3u8")
        segment = next((line for line in playlist.splitlines() if line and not line.startswith("#")), None)
    size = 0
    if ok and segment:
        _, length = router(f"sh -c 'busybox wget -q -O - http://{board}:8080/streams/{stream}/{segment} | wc -c'")
        size = int((re.findall(r"\d+", length) or ["0"])[-1])
    if t.check("10 wifi: a client on the router's network plays the stream over the radio (its playlist and first segment)",
               ok and segment and size > 1000, f"{playlist[-400:]} segment {segment}: {size} bytes"):
        timings["button to a playable stream over Wi-Fi (s)"] = round(time.monotonic() - pressed, 1)
    mark = len(machine.text())
    machine.key("spc")
    machine.wait_for(r"onair: stream\.ended", 60, mark)
