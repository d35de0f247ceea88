"""make vm-test, scenario 11 (qemu-x86_64, boot 3, after scenario 10): the setup network.

The home router's password changes (scripts/vm_wifi.py): the board says so and opens its
setup network, onair-XXXXXX, WPA2 with the operator's password (server.token), a second
interface (ap0) beside its station on the same radio, and shows it on the attached screen as a
QR code (zbarimg reads it from QEMU's screendump). A "phone" in another network
namespace of the guest — mac80211_hwsim's third radio, wpa_supplicant and busybox — joins
it, takes an address by DHCP (systemd-networkd's server on ap0), finds that any name is
the board (busybox nslookup against onair's DNS), has its captive-portal check sent to the
setup page (port 80's 302), reads the page (the operator's name and password) with the
home network in its list of networks seen, and saves the router's new password there.
The board joins the home network again, closes the setup network (its code leaves the
screen), and the saved onair.conf on the FAT partition keeps its comments (checked by
vm_test after the boot).
"""
import base64
import json
import os
import re
import subprocess
import time

import vm_wifi
from browser import Chromium

TOKEN = "setup-operator-0123456"
# The host's port to the phone's relay (beside vm_test's own ports).
PAGE_PORT = lambda t: t.PORTS + 93


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
    # The attached screen: the network's QR code beside the picture (the preview's next
    # frame draws it), read from QEMU's screendump as a phone's camera would.
    seen = read_screen(t, machine, lambda text: text is not None)
    t.check("11 setup: the attached screen shows the setup network as a QR code a phone joins from, without the password (screendump, zbarimg)",
            seen == f"WIFI:T:WPA;S:{ssid};;", repr(seen))

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

    # Headless Chromium on the host, as a phone's browser: its connections reach the
    # phone's namespace through a relay in the guest (the host's port → busybox nc →
    # nc in the phone's namespace), and go from there over the radio to the board.
    relay = "exec nsenter --net=/run/netns/phone busybox nc 192.168.4.1 8080\n"
    # (/run is mounted noexec: the relay is a script sh reads.)
    ok, _ = run(f"cat > /run/phone-relay <<'EOF'\n{relay}EOF\n"
                "(setsid busybox nc -ll -p 8081 -e sh /run/phone-relay < /dev/null > /dev/null 2>&1 &)")
    machine.command(f"hostfwd_add n0 tcp:127.0.0.1:{PAGE_PORT(t)}-:8081")
    mark = len(machine.text())
    saved = fill_in_setup_page(t, f"http://127.0.0.1:{PAGE_PORT(t)}/setup", new_password, timings) if ok else None
    t.check("11 setup: headless Chromium, as the phone's browser, fills in the setup page with the router's new password and saves it",
            saved is not None and saved.startswith("Saved. The camera now joins"), saved)
    # The run starts again on the saved file (nothing is being recorded): the new run's
    # status line says where the board is.
    joined = machine.wait_for(r"onair: \S+ [^\n]* wifi=joined\(192\.168\.77\.\d+\)[^\n]*", 180, mark)
    closed = machine.wait_for(r"onair: setup\.closed[^\n]*", 60, mark)
    t.check("11 setup: the board joins the home network with it and closes the setup network",
            joined and closed, machine.text()[mark:][-1500:])
    _, interfaces = run("iw dev")
    t.check("11 setup: ... ap0 is gone from the radio", "ap0" not in interfaces, interfaces)
    t.check("11 setup: ... and its QR code from the screen", read_screen(t, machine, lambda text: text is None) is None)
    t.check("11 setup: no password was shown on the console", new_password not in machine.text() and TOKEN not in machine.text())
    # Found by name from the home network: an mDNS query (RFC 6762 §5) from the router's
    # namespace for the name the console says, answered by the board's systemd-resolved.
    name = re.findall(r" at=([a-z0-9-]+\.local)", machine.text()[mark:])
    ok, _ = run(f"cat > /run/mdns-query.pl <<'EOF'\n{MDNS_QUERY}EOF")
    ok = ok and router(f"busybox ip route add 224.0.0.0/4 dev wlan1")[0]
    ok, answer = router(f"perl /run/mdns-query.pl {name[-1]} {vm_wifi.ROUTER}", timeout=30) if ok and name else (False, "no .local name on the console")
    t.check("11 setup: the home network finds the board as NAME.local (an mDNS query from the router's namespace)",
            ok and re.fullmatch(r"192\.168\.77\.\d+", answer.strip().splitlines()[-1] if answer.strip() else ""), answer[-300:])


# A one-shot mDNS querier (RFC 6762 §5.1) in the perl-base every Debian image has: asks
# 224.0.0.251:5353 for NAME's A record from port 5353 on ADDRESS's link, prints the
# address the answer holds (names decompressed as RFC 1035 §4.1.4 says).
MDNS_QUERY = r"""use strict; use Socket qw(:DEFAULT IPPROTO_IP IP_ADD_MEMBERSHIP IP_MULTICAST_IF IP_MULTICAST_TTL pack_ip_mreq);
my ($name, $link) = @ARGV;
socket(my $s, PF_INET, SOCK_DGRAM, 0) or die "socket: $!";
setsockopt($s, SOL_SOCKET, SO_REUSEADDR, 1) or die "reuse: $!";
bind($s, sockaddr_in(5353, INADDR_ANY)) or die "bind: $!";
setsockopt($s, IPPROTO_IP, IP_ADD_MEMBERSHIP, pack_ip_mreq(inet_aton("224.0.0.251"), inet_aton($link))) or die "join: $!";
setsockopt($s, IPPROTO_IP, IP_MULTICAST_IF, inet_aton($link)) or die "interface: $!";
setsockopt($s, IPPROTO_IP, IP_MULTICAST_TTL, 255) or die "ttl: $!";
sub skip { my ($p, $o) = @_; while (1) { my $l = ord substr($p, $o, 1); return $o + 2 if $l >= 0xC0; return $o + 1 if $l == 0; $o += $l + 1 } }
sub label { my ($p, $o) = @_; my @n; for (1..64) { my $l = ord substr($p, $o, 1);
  if ($l >= 0xC0) { $o = unpack("n", substr($p, $o, 2)) & 0x3FFF; next } last if $l == 0; push @n, substr($p, $o + 1, $l); $o += $l + 1 } lc join(".", @n) }
my $query = pack("n6", 0, 0, 1, 0, 0, 0) . join("", map { chr(length) . $_ } split /\./, $name) . "\0" . pack("n2", 1, 1);
for (1..5) {
  send($s, $query, 0, sockaddr_in(5353, inet_aton("224.0.0.251"))) or die "send: $!";
  my $in = ""; vec($in, fileno($s), 1) = 1;
  while (select(my $ready = $in, undef, undef, 2)) {
    defined(recv($s, my $p, 9000, 0)) or die "recv: $!";
    my ($id, $flags, $qd, $an, $ns, $ar) = unpack("n6", $p);
    next unless $flags & 0x8000;
    my $o = 12;
    $o = skip($p, $o) + 4 for 1..$qd;
    for (1..$an + $ns + $ar) {
      my $owner = label($p, $o); $o = skip($p, $o);
      my ($type, $class, $ttl, $length) = unpack("n n N n", substr($p, $o, 10)); $o += 10;
      if ($owner eq lc $name && $type == 1 && $length == 4) { print inet_ntoa(substr($p, $o, 4)), "
"; exit 0 }
      $o += $length;
    }
  }
}
die "no answer for $name
";
"""


def fill_in_setup_page(t, url, new_password, timings):
    """Chromium at a phone's size opens the setup page as the operator, checks what it
    shows, types the router's new password and saves: the message the board answers."""
    browser = Chromium(os.path.join(t.WORK, "chromium-setup"))
    try:
        browser.open("about:blank")
        browser.call("Emulation.setDeviceMetricsOverride", {"width": 390, "height": 844, "deviceScaleFactor": 1, "mobile": True})
        browser.call("Network.enable")
        login = base64.b64encode(f"operator:{TOKEN}".encode()).decode()
        browser.call("Network.setExtraHTTPHeaders", {"headers": {"Authorization": f"Basic {login}"}})
        browser.open(url)
        seen = settled(browser, "document.readyState == 'complete' && document.getElementById('wifi.password')"
                                " ? [...document.querySelectorAll('#seen option')].map(o => o.value).join('\\n') : null", 90)
        t.check("11 setup: the setup page opens in the phone's browser, with the home network in its list of networks seen",
                seen is not None and vm_wifi.SSID in seen.split("\n"), repr(seen))
        weight = browser.evaluate("performance.getEntriesByType('navigation')[0].transferSize")
        if isinstance(weight, int):
            timings["setup page over the setup network (KB)"] = round(weight / 1024, 1)
        shot = browser.call("Page.captureScreenshot", {"format": "png"})
        with open(os.path.join(t.WORK, "setup-390x844.png"), "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        values = json.dumps({"wifi.ssid": vm_wifi.SSID, "wifi.password": new_password})
        # Pressed after the call returns: the navigation would end the call with an error.
        browser.evaluate(f"(function(v){{ for (const k in v) {{ document.getElementById(k).value = v[k]; }} window.before = true;"
                         f" setTimeout(function(){{ document.querySelector('button[type=submit]').click(); }}, 0); return true; }})({values})")
        return settled(browser, "!window.before && document.readyState == 'complete' && document.getElementById('message')"
                                " ? document.getElementById('message').textContent : null", 120)
    except (RuntimeError, OSError) as error:
        return f"the browser: {error}"
    finally:
        browser.close()


def settled(browser, expression, seconds):
    """The expression's value once it is not null (a page being replaced may fail a call)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            value = browser.evaluate(expression)
        except RuntimeError:
            value = None
        if value is not None:
            return value
        time.sleep(0.2)
    return None


def read_screen(t, machine, done, tries=10):
    """What zbarimg reads from the screen (None: no code), once `done` holds for it or
    after `tries` screendumps a second apart."""
    text = None
    for attempt in range(tries):
        dump = machine.screendump(os.path.join(t.WORK, f"setup-screen-{attempt}.ppm"))
        result = subprocess.run(["zbarimg", "--quiet", "--raw", "-Sdisable", "-Sqrcode.enable", dump], capture_output=True, text=True)
        text = result.stdout.rstrip("\n") if result.returncode == 0 else None
        if done(text):
            break
        time.sleep(1)
    return text


def check_saved(t, text):
    """After the boot: the FAT's onair.conf has the new password and kept its comments."""
    t.check("11 setup: the onair.conf the page saved on the FAT partition keeps its comments and has the new password",
            "the router's new password" in text and text.count("\n#") >= 5, text[-600:])
