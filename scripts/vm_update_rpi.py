"""make vm-test BOARD=rpi4, scenario 9: updates on the Raspberry Pi's A/B layout (issue 34)
on the virt machine, with the board's RAUC, its backend (image/rootfs/onair-slot-rpi) and
kexec, the test playing the firmware: it boots the slot whose boot partition partition 1's
autoboot.txt names (vm_virt.firmware).

  boot 1  (slot A, committed) a newer build installs into B (`onair update URL --reboot`),
          and onair boots it once by kexec, in the same machine: B runs on trial, and
          onair confirms it after update.confirm_seconds, which commits it (autoboot.txt
          names partition 3). Then a build whose onair cannot start installs into A, and
          onair boots it by kexec: onair-update-deadline gives it up once onair has failed
          to start 5 times and resets the board.
  boot 9  the firmware boots what autoboot.txt names, B, which says the update to A was
          rolled back, and why.

What the virt machine cannot show (README, "What only a real board can prove"): the firmware reading
autoboot.txt itself, config.txt and the device tree it passes (a slot booted by kexec keeps
the running one's), and the firmware's own tryboot flag, which nothing here sets.
"""
import os
import re
import subprocess
import time

import vm_update
import vm_virt


def install_in_background(machine, url):
    """`onair update URL --reboot` on the board, left running: the board goes with it."""
    machine.shell.run(f"setsid onair update {url} --reboot >/data/update-rpi.log 2>&1 </dev/null &", timeout=10)


def committed(machine):
    """The partition autoboot.txt on the board's boot partition commits, and onair-slot's status."""
    status, output = machine.shell.run("cat /boot/firmware/autoboot.txt", timeout=60)
    partition = vm_virt.autoboot_partition(output) if status == 0 else None
    _, slots = machine.shell.run("/usr/lib/onair/onair-slot status", timeout=60)
    return partition, slots.strip().replace("\n", " ")


def scenario(t, machine, disk, origin, timings):
    """T: the vm_test module; MACHINE: boot 1, slot A, up. Returns the machine running at
    the end (for the caller to shut down)."""
    check, say = t.check, t.say
    key = os.path.join(t.REPO, ".build", "update-key", "development.key.pem")
    cert = os.path.join(t.REPO, ".build", "update-key", "development.cert.pem")
    say("9 update: making the test's bundles")
    started = time.monotonic()
    bundles = vm_update.make_bundles(t.REPO, t.WORK, origin.root, t.BOARD, key, cert, refusals=False)
    timings["bundle size (MB)"] = round(os.path.getsize(os.path.join(origin.root, "update", "new.raucb")) / 1e6)
    say(f"9 update: bundles made in {time.monotonic() - started:.0f} s")
    url = {name: f"http://10.0.2.2:{t.ORIGIN_PORT}{path}" for name, (path, _) in bundles.items()}

    # The newer build into B; onair's reboot into it is a kexec: the same QEMU goes on.
    mark = len(machine.text())
    started = time.monotonic()
    install_in_background(machine, url["new"])
    trial = machine.wait_for(r"onair: update\.slot slot=B [^\n]*", 900, mark)
    check("9 update: a newer build installs into slot B, and onair boots it once by kexec (no reset): it runs on trial",
          trial and "state=trial" in trial.group(0) and bundles["new"][1] in trial.group(0) and machine.process.poll() is None,
          trial.group(0) if trial else vm_update.console_tail(machine.text()[mark:]))
    if not trial:
        return machine
    timings["rpi: bundle download, install and kexec into it (s)"] = round(time.monotonic() - started, 1)
    _, log = machine.shell.run("cat /data/update-rpi.log", timeout=60)
    check("9 update: onair-slot said it boots slot B once, by kexec", "booting slot B once (kexec)" in log, log[-600:])
    confirmed = machine.wait_for(r"onair: update\.confirmed[^\n]*", vm_update.CONFIRM_SECONDS + 120, mark)
    partition, slots = committed(machine)
    check("9 update: onair confirms slot B, which commits it: autoboot.txt's [all] names partition 3",
          confirmed and partition == 3 and "committed=B" in slots, f"{confirmed.group(0) if confirmed else 'not confirmed'}; "
          f"boot_partition={partition}; {slots}")

    # A build whose onair cannot start, into A; booted by kexec, given up, the board reset.
    mark = len(machine.text())
    install_in_background(machine, url["broken"])
    try:
        machine.process.wait(timeout=900)
    except subprocess.TimeoutExpired:
        pass
    text = machine.text()[mark:]
    gave_up = re.search(r"onair-update-deadline: [^\n]*back to the other slot", text)
    check("9 update: a build whose onair cannot start installs into slot A and is booted by kexec; the board gives it up "
          "once onair failed to start 5 times or more, and resets",
          machine.process.poll() is not None and gave_up and re.search(r"failed to start \d+ times", gave_up.group(0)),
          gave_up.group(0) if gave_up else vm_update.console_tail(text))
    if machine.process.poll() is None:
        machine.power_cut()

    # The firmware boots the committed slot: B.
    machine = t.Machine(disk, 9)
    vm_update.check_back_on_b(t, machine, "9 update: the firmware boots slot B (autoboot.txt); it says the update to A was "
                              "rolled back, and why", bundles["new"][1])
    return machine
