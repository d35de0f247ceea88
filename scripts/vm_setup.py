"""make vm-test, scenario 11 (qemu-x86_64, boot 3, after scenario 10): the setup network.

The home router's password changes (scripts/vm_wifi.py): the board says so and opens its
setup network, onair-XXXXXX, WPA2 with the operator's password (server.token), a second
interface (ap0) beside its station on the same radio. A "phone" in another network
namespace of the guest — mac80211_hwsim's third radio, wpa_supplicant and busybox — joins
it, takes an address by DHCP (systemd-networkd's server on ap0), finds that any name is
the board (busybox nslookup against onair's DNS), has its captive-portal check sent to the
setup page (port 80's 302), reads the page (the operator's name and password) with the
home network in its list of networks seen, and saves the router's new password there.
The board joins the home network again, closes the setup network, and the saved
onair.conf on the FAT partition keeps its comments (checked by vm_test after the boot).
"""
import re

import vm_wifi

TOKEN = "setup-operator-0123456"


def config_section():
    """The operator's password, which guards the setup network (boot 3's onair.conf)."""
    return f"\n[server]\ntoken = {TOKEN}\n"


def scenario(t, machine, run, router, timings):
    """Runs after scenario 10 left the board joined; the router's password changes now."""
    phone = lambda command, timeout=60: run(f"nsenter --net=/run/netns/phone {command}", timeout)
    mark = len(machine.text())
    new_password = "the router's new password"
    ok = vm_wifi.restart_router(run, router, "WPA-PSK SAE", 1, new_password)
    opened = machine.wait_for(r"onair: setup\.open [^\n]*ssid=(onair-[0-9a-f]{6})[^\n]*", 240, mark)
    if not t.check("11 setup: the Wi-Fi's password is wrong: the board opens its setup network (onair-XXXXXX, WPA2 with the operator's password)",
                   ok and opened and "wpa2" in opened.group(0) and "page=http://192.168.4.1:8080/setup" in opened.group(0),
                   opened.group(0) if opened else machine.text()[mark:][-1500:]):
        _, said = run("systemctl status --no-pager onair-setup-ap@wlan0 | tail -20; iw dev")
        t.say(said)
        return
    ssid = opened.group(1)

    conf = f'ctrl_interface=/run/wpa_supplicant-phone\nnetwork={{\n\tssid="{ssid}"\n\tpsk="{TOKEN}"\n\tkey_mgmt=WPA-PSK\n}}\n'
    ok, _ = run(f"cat > /run/phone.conf <<'EOF'\n{conf}EOF")
    ok = ok and phone("sh -c 'busybox ip link set lo up && wpa_supplicant -B -i wlan2 -c /run/phone.conf'")[0]
    # The phone joins at its next scan that finds the network (its scans back off).
    ok = ok and phone("sh -c 'for i in $(seq 90); do wpa_cli -p /run/wpa_supplicant-phone -i wlan2 status | grep -q wpa_state=COMPLETED"
                      " && exit 0; wpa_cli -p /run/wpa_supplicant-phone -i wlan2 scan > /dev/null; sleep 2; done; exit 1'", timeout=200)[0]
    # -B: the server's answers broadcast, as a phone's DHCP client asks over Wi-Fi. The
    # lease is read from what udhcpc says, and set by hand.
    ok, said = phone("busybox udhcpc -i wlan2 -B -n -q -t 30 -T 3 -s /bin/true", timeout=150) if ok else (False, "")
    lease = re.search(r"lease of (192\.168\.4\.\d+) obtained", said)
    address = lease.group(1) if lease else said[-300:]
    ok = ok and lease is not None and phone(f"busybox ip addr add {address}/24 dev wlan2")[0]
    if not t.check("11 setup: a phone joins the setup network with the operator's password and gets an address by DHCP",
                   ok and address.strip().startswith("192.168.4."), address):
        _, said = run("iw dev; systemctl status --no-pager onair-setup-ap@wlan0 | tail -15; networkctl status --no-pager ap0 | tail -15;"
                      " nsenter --net=/run/netns/phone busybox ip addr; journalctl -b --no-pager -u systemd-networkd | tail -20;"
                      " nsenter --net=/run/netns/phone wpa_cli -p /run/wpa_supplicant-phone -i wlan2 status;"
                      " nsenter --net=/run/netns/phone wpa_cli -p /run/wpa_supplicant-phone -i wlan2 scan_results")
        t.say(said)
        return

    _, answer = phone("busybox nslookup connectivitycheck.gstatic.com 192.168.4.1")
    names = answer.split("Name:", 1)
    t.check("11 setup: any name the phone asks the board's DNS for is the board (connectivitycheck.gstatic.com → 192.168.4.1)",
            len(names) == 2 and "192.168.4.1" in names[1], answer)
    _, probe = phone("busybox wget -S -O /dev/null --header 'Host: connectivitycheck.gstatic.com' http://192.168.4.1/generate_204")
    t.check("11 setup: the phone's captive-portal check (Android's generate_204) is sent to the setup page",
            "302" in probe and "Location: http://192.168.4.1:8080/setup" in probe, probe[-800:])

    ok, page = phone(f"busybox wget -q -O - http://operator:{TOKEN}@192.168.4.1:8080/setup")
    version = re.search(r'name="version" value="([0-9a-f]{64})"', page)
    t.check("11 setup: the setup page opens for the operator, with the home network in its list of networks seen",
            ok and version and f'<option value="{vm_wifi.SSID}">' in page, page[-800:])
    if not version:
        return
    mark = len(machine.text())
    form = f"version={version.group(1)}&wifi.ssid={quote(vm_wifi.SSID)}&wifi.password={quote(new_password)}"
    ok, saved = phone(f"busybox wget -q -O - --post-data '{form}' http://operator:{TOKEN}@192.168.4.1:8080/setup", timeout=90)
    t.check("11 setup: the phone saves the router's new password on the setup page", ok and "Saved. The camera now joins" in saved, saved[-600:])
    # The run starts again on the saved file (nothing is being recorded): the new run's
    # status line says where the board is.
    joined = machine.wait_for(r"onair: \S+ [^\n]* wifi=joined\(192\.168\.77\.\d+\)[^\n]*", 180, mark)
    closed = machine.wait_for(r"onair: setup\.closed[^\n]*", 60, mark)
    t.check("11 setup: the board joins the home network with it and closes the setup network",
            joined and closed, machine.text()[mark:][-1500:])
    _, interfaces = run("iw dev")
    t.check("11 setup: ... ap0 is gone from the radio", "ap0" not in interfaces, interfaces)
    t.check("11 setup: no password was shown on the console", new_password not in machine.text() and TOKEN not in machine.text())


def quote(text):
    """application/x-www-form-urlencoded, as a browser writes a form."""
    return "".join(chr(b) if chr(b).isalnum() or chr(b) in "-._" else ("+" if b == 0x20 else "%%%02X" % b) for b in text.encode())


def check_saved(t, text):
    """After the boot: the FAT's onair.conf has the new password and kept its comments."""
    t.check("11 setup: the onair.conf the page saved on the FAT partition keeps its comments and has the new password",
            "the router's new password" in text and text.count("\n#") >= 5, text[-600:])
