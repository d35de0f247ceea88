"""make vm-test BOARD=rpi4|rpi5: what QEMU's aarch64 `virt` machine needs that a Pi has
otherwise, so that the image itself stays as it is flashed.

The board's own kernel and initramfs boot from the slot's boot partition that partition
1's autoboot.txt names (the test plays the Pi firmware), with its cmdline.txt and what the
test adds: its devices (modules and options, which modprobe reads) and two units passed
as systemd credentials (systemd.extra-unit.*): the test tone, and the test's way into the board — a
shell on a virtio serial port whose other end is a unix socket of the host's, for what only
the inside of the board can do (set a simulated button line, power off cleanly). On a
kernel that builds gpio-sim (the rpi5 image's), that unit first makes a simulated GPIO chip
from configfs, before onair starts: its line 3 is the button, set by the test through the
chip's sysfs (`sim_gpio3/pull`). The owner's onair.conf on the FAT says what differs from
a Pi: no GPIO header (the button and the tally on the virt machine's lines), the UART,
small pictures.
"""
import base64
import os
import re
import socket
import time

BOARDS = ("rpi4", "rpi5")

TONE_UNIT = """[Unit]
Description=vm-test: a 440 Hz tone into the sound loopback, for the microphone to hear
After=systemd-modules-load.service sound.target
Before=onair.service
[Service]
ExecStart=/usr/bin/speaker-test -D hw:Loopback,0,0 -c 2 -r 48000 -F S16_LE -t sine -f 440 -l 0
StandardOutput=null
Restart=always
RestartSec=1
"""
# (A virtio serial port opens once at a time: the shell's input, output and errors are one
# open of it.)
SHELL_UNIT = r"""[Unit]
Description=vm-test: a simulated GPIO chip, and a shell for the test on its serial port
Wants=dev-virtio\x2dports-onair.test.device
After=dev-virtio\x2dports-onair.test.device systemd-modules-load.service sys-kernel-config.mount
Before=onair.service
[Service]
ExecStartPre=-/bin/sh -c 'modprobe -q gpio-sim && cd /sys/kernel/config/gpio-sim && mkdir -p vmtest/bank0 && echo 8 >vmtest/bank0/num_lines && echo 1 >vmtest/live && mkdir -p vmtest2/bank0/line0/hog && echo 1 >vmtest2/bank0/num_lines && echo vm-test-hog >vmtest2/bank0/line0/hog/name && echo output-low >vmtest2/bank0/line0/hog/direction && echo 1 >vmtest2/live'
ExecStart=/bin/sh -c 'exec sh 0<>/dev/virtio-ports/onair.test 1>&0 2>&0'
"""


def unit(name, text):
    return (f"systemd.set_credential_binary=systemd.extra-unit.{name}:{base64.b64encode(text.encode()).decode()} "
            f"systemd.wants={name}")


def autoboot_partition(text):
    """The partition autoboot.txt's [all] section boots (boot_partition), as the firmware
    reads it; None when it names none."""
    section, partition = "all", None
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("["):
            section = line[1:].split("]")[0]
        elif section == "all" and line.startswith("boot_partition="):
            partition = int(line.split("=", 1)[1]) if line.split("=", 1)[1].isdigit() else None
    return partition


def firmware(image, copy_file, read_file):
    """What a Pi's firmware boots, read off the image: partition 1's autoboot.txt names the
    committed slot's boot partition; its kernel, initramfs and cmdline.txt. (The firmware
    would read config.txt and the device tree there too: the virt machine has its own.)
    Returns (kernel path, initramfs path, command line)."""
    partition = autoboot_partition(read_file(image, "autoboot.txt"))
    return (copy_file(image, "vmlinuz", partition), copy_file(image, "initrd.img", partition),
            read_file(image, "cmdline.txt", partition).strip())


def cmdline(board, slot_line):
    """The slot's cmdline.txt (SLOT_LINE), then what the virt machine needs: its UART as the
    console, the test's devices and units. (A Pi's firmware adds its own words too, before
    cmdline.txt's; onair-slot-rpi keeps either where they are when it kexecs a slot.)"""
    line = (f"{slot_line} console=ttyAMA0,115200 "
            "modules-load=vivid,snd_aloop vivid.n_devs=1 vivid.node_types=0x1 "
            "snd_aloop.index=0 snd_aloop.id=Loopback snd_aloop.pcm_substreams=1 ")
    if board == "rpi4":
        # The virt machine's device tree gives PL061 line 3 to gpio-keys (its power key,
        # which the monitor's system_powerdown pulses): kept from loading, onair takes the
        # line as its record button, as it takes GPIO17 on a Pi.
        line += "modprobe.blacklist=gpio_keys "
    return line + unit("onair-test-tone.service", TONE_UNIT) + " " + unit("onair-test-shell.service", SHELL_UNIT)


COMMON_SETTINGS = """
# vm-test: QEMU's aarch64 virt machine instead of a Pi.
[video]
width = 320
height = 180
fps = 10
bitrate = 300k
preset = ultrafast
[record]
width = 320
height = 180
bitrate = 1M
[audio]
device = plughw:Loopback,1,0
[console]
device = /dev/ttyAMA0
interval_s = 5
[performance]
capacity.x264 = 20M
[update]
# Scenario 9 (rpi4): a slot on trial is confirmed after 10 s healthy.
confirm_seconds = 10
"""
BUTTON_SETTINGS = {
    "rpi4": """[button]
# QEMU's PL061: line 3 goes high for 100 ms at system_powerdown. The PL061 has no
# pull-ups (gpiolib ignores the bias asked for, saying nothing), so pull-down is only
# asked; the line idles low, and onair would wait for a release if it read pressed.
gpio = gpiochip0:3
active_low = false
bias = pull-down
keys = KEY_SPACE
[tally]
# An output line the host reads back through the monitor (the PL061 data register).
gpio = gpiochip0:4
""",
    "rpi5": """[button]
# The test's first gpio-sim chip (made after the PL061, gpiochip0): its line 3 is wired as
# a Pi's button is, to ground with the pull-up onair asks for (the board's own active_low,
# bias and debounce_ms), so gpio-sim keeps the line high until the test pulls it down.
gpio = gpiochip1:3
keys = KEY_SPACE
# Longer than the default 500: the double tap's presses are asked 0.3 s apart, but a
# `sleep` in the emulated board's shell can take far longer than it asks under TCG on a
# busy host (CI saw the second press land past 500 ms). The rule is the same at any width.
min_interval_ms = 2000
[tally]
# The second gpio-sim chip's line 0, held by a hog (vm-test-hog) until the test frees it.
gpio = gpiochip2:0
""",
}


def settings(board):
    return COMMON_SETTINGS + BUTTON_SETTINGS[board]


# The PL061's data register (0x09030000, read through the mask at 0x3fc): the tally line's level.
PL061_DATA = 0x090303fc
TALLY_BIT = 1 << 4


TALLY_VALUE = "cat /sys/devices/platform/gpio-sim.*/gpiochip2/sim_gpio0/value"


def tally_levels(machine, board, samples=6):
    """The tally line's level, sampled every 0.25 s: on rpi4 from the host (QEMU monitor
    `xp` of the PL061), on rpi5 from the gpio-sim line's value, through the test's shell."""
    levels = []
    for _ in range(samples):
        if board == "rpi4":
            answer = machine.command(f"xp /1wx {PL061_DATA:#x}")
            value = re.search(r":\s*0x([0-9a-f]+)", answer)
            levels.append(bool(int(value.group(1), 16) & TALLY_BIT) if value else None)
        else:
            status, output = machine.shell.run(TALLY_VALUE)
            levels.append(output.strip() == "1" if status == 0 else None)
        time.sleep(0.25)
    return levels


# The second gpio-sim chip again, without its hog: the tally's line is free.
FREE_TALLY = ("cd /sys/kernel/config/gpio-sim/vmtest2 && echo 0 >live && rmdir bank0/line0/hog && echo 1 >live && "
              "ls /dev/gpiochip2")


def check_busy_tally(machine, check):
    """0 devices (rpi5): a tally line another request holds does not stop onair, which says
    who holds it (the kernel's consumer name), and takes the line once it is free."""
    busy = machine.wait_for(r"onair: device\.unavailable key=tally\.gpio[^\n]*", 10)
    check("0 devices: the tally's line, held by another request, is said busy with its holder's name",
          busy and 'held by vm-test-hog' in busy.group(0), busy.group(0) if busy else machine.text()[-800:])
    mark = len(machine.text())
    status, output = machine.shell.run(FREE_TALLY)
    available = machine.wait_for(r"onair: device\.available key=tally\.gpio[^\n]*", 30, mark)
    check("0 devices: once the line is free, onair takes it (device.available)", status == 0 and available,
          output[-300:] + machine.text()[mark:][-500:])


class Shell:
    """The host's end of the test shell: a unix socket QEMU connects to as it starts."""

    def __init__(self, path):
        self.path = path
        if os.path.exists(path):
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX)
        self.listener.bind(path)
        self.listener.listen(1)
        self.connection = None
        self.pending = b""
        self.count = 0

    def qemu_arguments(self):
        return ["-device", "virtio-serial-pci", "-chardev", f"socket,id=test,path={self.path}",
                "-device", "virtserialport,chardev=test,name=onair.test"]

    def accept(self):
        self.listener.settimeout(60)
        self.connection, _ = self.listener.accept()

    def run(self, command, timeout=60):
        """Runs COMMAND in the board's shell: (exit status, output), or (None, output so far)."""
        self.count += 1
        marker = f"vmtest-done-{self.count}"
        self.connection.sendall(f"{command}\necho {marker} $?\n".encode())
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = re.search(rf"{marker} (\d+)\r?\n".encode(), self.pending)
            if found:
                output = self.pending[:found.start()].decode(errors="replace")
                self.pending = self.pending[found.end():]
                return int(found.group(1)), output
            self.connection.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                chunk = self.connection.recv(4096)
            except socket.timeout:
                break
            if not chunk:
                break
            self.pending += chunk
        return None, self.pending.decode(errors="replace")

    def close(self):
        if self.connection:
            self.connection.close()
        self.listener.close()


# The simulated button (rpi5): the line is wired to ground when pressed; gpio-sim's pull
# stands for the button. Each command runs in the board's shell, so its timing is the
# board's (a `sleep` there is a process: tens of milliseconds under TCG, never less).
BUTTON = "P=$(echo /sys/devices/platform/gpio-sim.*/gpiochip1/sim_gpio3/pull)"
PRESS = "echo pull-down >$P"
RELEASE = "echo pull-up >$P"
TAP = f"{PRESS}; sleep 0.2; {RELEASE}"
# A contact that bounces: five edges inside a few milliseconds (shell builtins, no
# process between them), then held, then bouncing open again.
BOUNCY_PRESS = f"{PRESS}; {RELEASE}; {PRESS}; {RELEASE}; {PRESS}; sleep 0.5; {RELEASE}; {PRESS}; {RELEASE}"
# Two presses about 0.3 s apart: well inside button.min_interval_ms (2000 in this test).
DOUBLE_TAP = f"{PRESS}; sleep 0.1; {RELEASE}; sleep 0.1; {PRESS}; sleep 0.1; {RELEASE}"
# rpi5's button.min_interval_ms above, in seconds: the test waits past it between scenarios.
MIN_INTERVAL_S = 2
# Held past button.long_press_s (3).
HOLD = f"{PRESS}; sleep 3.6; {RELEASE}"


def button_events(log, since=0):
    """(t_ms, event) of each press, release, ignored press and long press in onair's journal
    (from offset SINCE)."""
    return [(float(m.group(1)), m.group(2)) for m in
            re.finditer(r"t_ms=([\d.]+) level=\w+ event=(button\.(?:pressed|released|ignored|long_press))\b", log[since:])]


def check_button_rules(machine, check):
    """8 button (rpi5): the button's timing rules, with presses made on the gpio-sim line.
    A press that bounces inside the debounce window is one press; a second press 0.3 s
    after the first (inside button.min_interval_ms) is ignored, so the stream it started
    goes on; a press held past button.long_press_s starts a stream and the long press stops
    it. A tap between them stops each stream."""
    def stream_after(mark, what, timeout):
        return machine.wait_for(rf"onair: stream\.{what}[^\n]*", timeout, mark)

    def tap_to_stop(name):
        time.sleep(MIN_INTERVAL_S + 0.5)  # past button.min_interval_ms since the press that started it
        mark = len(machine.text())
        machine.shell.run(TAP)
        check(f"8 button: {name}: a tap stops the stream", stream_after(mark, "ended", 60))

    machine.shell.run(BUTTON)
    for name, presses in (("a press bouncing inside the debounce window", BOUNCY_PRESS),
                          ("a second press 0.3 s after the first (inside min_interval_ms)", DOUBLE_TAP)):
        time.sleep(MIN_INTERVAL_S + 1)
        mark = len(machine.text())
        machine.shell.run(presses)
        started = stream_after(mark, "started", 30)
        time.sleep(3)
        ended = re.search(r"onair: stream\.ended", machine.text()[mark:])
        check(f"8 button: {name} starts one stream and does not stop it", started and not ended,
              "\n".join(line for line in machine.text()[mark:].splitlines() if "stream." in line)[-600:])
        tap_to_stop(name)
    time.sleep(MIN_INTERVAL_S + 1)
    mark = len(machine.text())
    machine.shell.run(HOLD)
    started, ended = stream_after(mark, "started", 30), stream_after(mark, "ended", 60)
    check("8 button: a press held past long_press_s starts a stream, and the long press stops it", started and ended,
          "\n".join(line for line in machine.text()[mark:].splitlines() if "stream." in line)[-600:])


# What onair's journal must say of the presses of scenarios 3 and 8, in order: the two
# taps of scenario 3 (the second is the keyboard's space); the bouncing press as one press
# and its tap; the double tap's second press ignored (its release still seen) and the
# tap; the held press with its long press.
EXPECTED_BUTTON_EVENTS = (["pressed", "released", "pressed", "released"] + ["pressed", "released"] * 2
                          + ["pressed", "released", "ignored", "released", "pressed", "released"]
                          + ["pressed", "long_press", "released"])


def check_button_journal(log, check):
    """After the run: onair's journal of the button (rpi5)."""
    timed = button_events(log)
    events = [event.split(".", 1)[1] for _, event in timed]
    check("8 button: onair's journal has each press as the rules say (bounces merged, the double tap's second "
          "press ignored, one long press)", events == EXPECTED_BUTTON_EVENTS,
          " ".join(f"{event.split('.', 1)[1]}@{t:.0f}" for t, event in timed))
