"""make vm-test, scenario 9: updates (issue 34) on the qemu-x86_64 image, with the board's
real RAUC, systemd-boot's boot counting under OVMF and the image's own slots.

Bundles are made here from the image's root file system (out/onair-BOARD.root.ext4) with
image/bundle.sh and served from the test's origin: a newer build (its image.txt says
another version), one whose onair cannot start, one signed by a key the board does not
trust, a corrupted one, one for another board and one larger than a slot. On the board:
  boot 4  slot A; the untrusted, corrupted, other board's and too large bundles are
          refused with one line each and nothing changes; three installs of the newer
          one are cut short by a power cut (while downloading, while RAUC checks it,
          while it copies into B): each time the board boots A as it was (boots 4-cut1..3);
          then the newer one goes in through POST /api/update, the console says its
          progress, and update.reboot = idle reboots the board into B
  boot 5  B runs, on trial, and onair confirms it after update.confirm_seconds; then the
          broken build installs into A (onair update URL), and update.reboot = idle
          reboots the board into it
  boot 6  A cannot start onair: once it has failed 5 times, onair-update-deadline
          marks the slot bad and reboots
  boot 7  B runs again by itself and says the update was rolled back, and why
The streams and recordings on the data partition are byte-identical before and after.
"""
import os
import random
import re
import shutil
import subprocess
import time

CONFIRM_SECONDS = 10
# The operator's token (server.token) the API install is made with.
TOKEN = "vmtest-update-token"
# onair-update-deadline gives a trial slot update.confirm_seconds and 180 s more.
DEADLINE_SECONDS = CONFIRM_SECONDS + 180


def debugfs(image, commands):
    subprocess.run(["debugfs", "-w", "-f", "-", image], input="\n".join(commands) + "\n", text=True,
                   capture_output=True, check=True)


def root_with(base, path, version_suffix, replace=None, work=None, board=None):
    """A copy of the root file system BASE at PATH, its image.txt version suffixed (and its
    board BOARD); REPLACE: (path in the root, file on the host) pairs written over."""
    shutil.copyfile(base, path)
    info = subprocess.run(["debugfs", "-R", "cat /usr/share/onair/image.txt", path], capture_output=True, text=True).stdout
    info = re.sub(r"(?m)^version=(.*)$", lambda m: f"version={m.group(1)}-{version_suffix}", info)
    if board:
        info = re.sub(r"(?m)^board=.*$", f"board={board}", info)
    host_info = os.path.join(work, f"image-{version_suffix}.txt")
    with open(host_info, "w") as f:
        f.write(info)
    commands = ["rm /usr/share/onair/image.txt", f"write {host_info} /usr/share/onair/image.txt"]
    for inside, host in replace or []:
        commands += [f"rm {inside}", f"write {host} {inside}", f"sif {inside} mode 0100755"]
    debugfs(path, commands)
    return re.search(r"(?m)^version=(.*)$", info).group(1)


def make_bundles(repo, work, origin_root, board, key, cert, refusals=True):
    """The test's bundles under ORIGIN_ROOT/update/: {name: (url path, version)}; without
    REFUSALS only the newer build and the broken one."""
    base = os.path.join(repo, "out", f"onair-{board}.root.ext4")
    folder = os.path.join(origin_root, "update")
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o755)
    made = {}

    def bundle(name, rootfs, signing_key, signing_cert, for_board=board):
        out = os.path.join(folder, f"{name}.raucb")
        subprocess.run([os.path.join(repo, "image", "bundle.sh"), for_board, os.path.join(repo, "out"), signing_key, signing_cert,
                        rootfs, out], check=True, capture_output=True, text=True)
        os.chmod(out, 0o644)
        return out

    new_root = os.path.join(work, "root-new.ext4")
    new_version = root_with(base, new_root, "vmtest-new", work=work)
    bundle("new", new_root, key, cert)
    made["new"] = ("/update/new.raucb", new_version)

    broken_onair = os.path.join(work, "broken-onair")
    with open(broken_onair, "w") as f:
        f.write("#!/bin/sh\necho 'onair: this build cannot start' >&2\nexit 1\n")
    broken_root = os.path.join(work, "root-broken.ext4")
    made["broken"] = ("/update/broken.raucb",
                      root_with(base, broken_root, "vmtest-broken", replace=[("/usr/bin/onair", broken_onair)], work=work))
    bundle("broken", broken_root, key, cert)
    os.unlink(broken_root)
    if not refusals:
        os.unlink(new_root)
        return made

    other_key, other_cert = os.path.join(work, "other.key.pem"), os.path.join(work, "other.cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-days", "30", "-subj", "/O=someone else/CN=not the board's key", "-keyout", other_key, "-out", other_cert],
                   check=True, capture_output=True)
    bundle("other-key", new_root, other_key, other_cert)
    made["other-key"] = ("/update/other-key.raucb", new_version)
    os.unlink(new_root)

    # For another board (RAUC's compatible check), and one whose root file system is
    # larger than a slot (onair's check against the signed manifest's size).
    other_root = os.path.join(work, "root-other.ext4")
    made["other-board"] = ("/update/other-board.raucb", root_with(base, other_root, "vmtest-other", work=work, board="rpi4"))
    bundle("other-board", other_root, key, cert, for_board="rpi4")
    os.unlink(other_root)
    large_root = os.path.join(work, "root-large.ext4")
    made["too-large"] = ("/update/too-large.raucb", root_with(base, large_root, "vmtest-large", work=work))
    with open(large_root, "r+b") as f:
        f.truncate((slot_mib(repo, board) + 32) << 20)
    bundle("too-large", large_root, key, cert)
    os.unlink(large_root)

    # Corrupted in its payload (the image inside the SquashFS): its signature still holds,
    # and dm-verity finds the changed blocks as RAUC reads them.
    corrupt = os.path.join(folder, "corrupt.raucb")
    shutil.copyfile(os.path.join(folder, "new.raucb"), corrupt)
    with open(corrupt, "r+b") as f:
        f.seek(os.path.getsize(corrupt) // 3)
        f.write(b"\xff" * 65536)
    made["corrupt"] = ("/update/corrupt.raucb", new_version)
    return made


def slot_mib(repo, board):
    """ROOT_SLOT_MIB of the board's board.conf (image/build.sh: 768 unless set): each root slot's size."""
    with open(os.path.join(repo, "board", board, "board.conf")) as f:
        found = re.search(r"(?m)^ROOT_SLOT_MIB=(\d+)", f.read())
    return int(found.group(1)) if found else 768


def slots(shell):
    """onair-slot status on the board, as a dict. (Right after an install the board
    is still writing the slot back from its page cache, which under TCG can hold up a
    read of the boot partition for tens of seconds.)"""
    status, output = shell.run("/usr/lib/onair/onair-slot status", timeout=180)
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line) if status == 0 else {"error": output[-300:]}


def data_files(shell):
    """Every stream and recording file on the data partition with its SHA-256."""
    status, output = shell.run("cd /data && find streams recordings -type f -print0 2>/dev/null | sort -z | xargs -0r sha256sum",
                               timeout=120)
    return dict(reversed(line.split(None, 1)) for line in output.splitlines() if len(line.split(None, 1)) == 2)


def install(shell, url, timeout=600):
    started = time.monotonic()
    status, output = shell.run(f"onair update {url}", timeout=timeout)
    return status, output, time.monotonic() - started


def boot_entries(t, disk):
    """The boot entries on the disk's EFI system partition, read with the board off."""
    offset, _ = t.partitions(disk)[1]
    listing = subprocess.run(["mdir", "-b", "-i", f"{disk}@@{offset}", "::loader/entries"], capture_output=True, text=True)
    return sorted(os.path.basename(line.strip()) for line in listing.stdout.splitlines() if line.strip().endswith(".conf"))


def cut_during_install(machine, url, when):
    """Starts `onair update URL` on the board and cuts the power once WHEN(state, since)
    holds of the install's state (/run/onair/update.state; SINCE(word): seconds since the
    state first named WORD). Returns where the install was."""
    # (The last install's state goes first: the new one's is what the cut waits for.)
    machine.shell.run(f"rm -f /run/onair/update.state; setsid onair update {url} >/run/update-cut.log 2>&1 </dev/null &", timeout=10)
    first = {}
    deadline = time.monotonic() + 300
    where = "before the install began"
    while time.monotonic() < deadline:
        _, output = machine.shell.run("cat /run/onair/update.state 2>/dev/null", timeout=10)
        state = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
        now = time.monotonic()
        for word in ("installing", "copying"):
            if word in (state.get("phase", "") + " " + state.get("step", "")).lower():
                first.setdefault(word, now)
        if state:
            where = f"{state.get('phase')}, {state.get('percent')}% {state.get('step')}, {state.get('bytes')} bytes"
        if state.get("phase") in ("installed", "failed"):
            where += " (the install had ended)"
            break
        if when(state, lambda word: now - first.get(word, now)):
            break
    machine.power_cut()
    return where


def console_tail(text, lines=30):
    return "\n".join(line for line in text.splitlines() if "update." in line or "onair-update" in line)[-1500:] or text[-800:]


def check_back_on_b(t, machine, said, version=None):
    """The board runs slot B again and says the update to the other slot was rolled back,
    and why: on the console (the check SAID) and in /api/status (with B's VERSION, if given)."""
    back = machine.wait_for(r"onair: update\.slot slot=B [^\n]*", 420)
    t.check(said, back and "state=rolled_back" in back.group(0) and "not confirmed" in back.group(0),
            back.group(0) if back else machine.text()[-1200:])
    machine.wait_for(r"onair: deferred_start\.done[^\n]*", 120)
    status = t.http_json("/api/status").get("update") or {}
    t.check("9 update: /api/status says so too" + (", and that B runs the newer build" if version else ""),
            status.get("slot") == "B" and status.get("state") == "rolled_back" and status.get("reason")
            and (version is None or status.get("version") == version), str(status))


def scenario(t, disk, origin, timings):
    """T: the vm_test module (its Machine, check, say, and helpers)."""
    check, say = t.check, t.say
    key = os.path.join(t.REPO, ".build", "update-key", "development.key.pem")
    cert = os.path.join(t.REPO, ".build", "update-key", "development.cert.pem")
    say("9 update: making the test's bundles")
    started = time.monotonic()
    bundles = make_bundles(t.REPO, t.WORK, origin.root, t.BOARD, key, cert)
    timings["bundle size (MB)"] = round(os.path.getsize(os.path.join(origin.root, "update", "new.raucb")) / 1e6)
    say(f"9 update: bundles made in {time.monotonic() - started:.0f} s: {bundles}")
    url = {name: f"http://10.0.2.2:{t.ORIGIN_PORT}{path}" for name, (path, _) in bundles.items()}
    t.remove_boot_file(disk, "test-uvc.conf")
    t.write_boot_file(disk, "test-shell.conf", "")
    conf = t.read_boot_file(disk, "onair.conf")
    t.write_boot_file(disk, "onair.conf", conf + f"\n[update]\nconfirm_seconds = {CONFIRM_SECONDS}\nreboot = idle\n\n[server]\ntoken = {TOKEN}\n")

    # Boot 4: slot A, as flashed.
    machine = t.Machine(disk, 4, shell=True)
    try:
        ready = machine.wait_for(r"onair: deferred_start\.done[^\n]*", 420)
        if not check("9 update: boot 4 comes up on slot A", ready and re.search(r"update\.slot slot=A [^\n]*state=confirmed", machine.text()),
                     machine.text()[-1200:]):
            return
        before = data_files(machine.shell)
        check("9 update: the data partition holds the earlier boots' streams and recordings", len(before) > 10, f"{len(before)} files")
        flashed = slots(machine.shell)
        for name, why, said in (("other-key", "signed by a key the board does not trust", "signature"),
                                ("corrupt", "corrupted in its payload", ""),
                                ("other-board", "for another board", "compatible"),
                                ("too-large", "larger than the slot", "is larger than slot rootfs")):
            status, output, _ = install(machine.shell, url[name])
            after = slots(machine.shell)
            check(f"9 update: a bundle {why} is refused with one line saying why, and the slots are as they were",
                  status not in (0, None) and "onair update: " in output and said.lower() in output.lower() and after.get("primary") == "A"
                  and after.get("slot.A.entry") == flashed.get("slot.A.entry") and after.get("booted") == "A",
                  f"exit {status}: {output.strip()[-400:]} / {after}")

        # Three power cuts at random moments of an install: while it downloads, while RAUC
        # checks the bundle, while it copies the image into slot B. Each time the board
        # boots slot A as it was.
        rng = random.Random(int(os.environ.get("VM_SEED", "0")) or None)
        size = os.path.getsize(os.path.join(origin.root, "update", "new.raucb"))
        # (A download over the VM's network can be over between two looks at the state:
        # then the cut comes at the first look after it.)
        cuts = (("while it downloads", lambda state, since: state.get("phase") not in (None, "downloading")
                 or int(state.get("bytes", "0")) >= fraction * size),
                ("while RAUC checks the bundle", lambda state, since: state.get("phase") == "installing" and since("installing") >= delay),
                ("while RAUC copies the image into slot B", lambda state, since: "Copying image" in state.get("step", "") and since("copying") >= delay))
        for number, (moment, when) in enumerate(cuts, 1):
            fraction, delay = rng.uniform(0.1, 0.8), rng.uniform(0, 1.5)
            where = cut_during_install(machine, url["new"], when)
            machine = t.Machine(disk, f"4-cut{number}", shell=True)
            ready = machine.wait_for(r"onair: deferred_start\.done[^\n]*", 420)
            after = slots(machine.shell) if ready else {}
            check(f"9 update: a power cut {moment} ({where}) leaves the board booting slot A as it was",
                  ready and re.search(r"update\.slot slot=A [^\n]*state=confirmed", machine.text()) and after.get("booted") == "A"
                  and after.get("primary") == "A" and after.get("slot.A.entry") == flashed.get("slot.A.entry"),
                  f"{after} / {machine.text()[-800:]}")

        # The second install goes through the API, and update.reboot = idle reboots the
        # board into it (nothing is live or recording: onair is armed).
        started = time.monotonic()
        answer = subprocess.run(["curl", "-sS", "-o", "-", "-w", "\n%{http_code}", "-X", "POST", "-T", os.path.join(origin.root, "update", "new.raucb"),
                                 "-H", f"Authorization: Bearer {TOKEN}", f"http://127.0.0.1:{t.HTTP_PORT}/api/update"],
                                capture_output=True, text=True, timeout=600)
        check("9 update: POST /api/update with the operator's token takes the bundle (202)", answer.stdout.strip().endswith("202"),
              answer.stdout[-400:] + answer.stderr[-400:])
        installed = machine.wait_for(r"onair: update\.installed[^\n]*", 600)
        timings["bundle upload and install (s)"] = round(time.monotonic() - started, 1)
        text = machine.text()
        check("9 update: the console shows the install as it goes: begun, its steps, installed, the reboot at idle",
              installed and re.search(r"onair: update\.installing [^\n]*phase=receiving", text) and re.search(r"onair: update\.progress [^\n]*Copying image", text)
              and "when nothing is live or recording" in installed.group(0)
              and machine.wait_for(r"onair: update\.rebooting [^\n]*idle", 60), console_tail(text))
        try:
            machine.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            check("9 update: the board reboots by itself once installed (update.reboot = idle)", False, machine.text()[-600:])
            machine.power_cut()

        # Boot 5: B on trial, confirmed by onair.
        machine = t.Machine(disk, 5, shell=True)
        trial = machine.wait_for(r"onair: update\.slot slot=B [^\n]*", 420)
        check("9 update: the board reboots into slot B, on trial, running the new version",
              trial and "state=trial" in trial.group(0) and bundles["new"][1] in trial.group(0), trial.group(0) if trial else machine.text()[-1200:])
        confirmed = machine.wait_for(r"onair: update\.confirmed[^\n]*", CONFIRM_SECONDS + 120)
        if confirmed:
            timings["reboot to confirmed slot (s)"] = round(time.monotonic() - machine.started, 1)
        after = slots(machine.shell)
        check(f"9 update: onair confirms slot B after {CONFIRM_SECONDS} s healthy; it boots from now on (onair-2-b.conf)",
              confirmed and after.get("slot.B.entry") == "onair-2-b.conf" and after.get("primary") == "B",
              f"{confirmed.group(0) if confirmed else machine.text()[-800:]} / {after}")
        status_json = t.http_json("/api/status").get("update") or {}
        check("9 update: /api/status says slot B runs the new version, confirmed",
              status_json.get("slot") == "B" and status_json.get("state") == "confirmed" and status_json.get("version") == bundles["new"][1],
              str(status_json))
        # An install from the board's terminal: update.reboot = idle holds for it too, so
        # the board reboots into slot A as soon as it is in (its shell may go with it).
        # The entries are read off the disk once the board is down.
        status, output, _ = install(machine.shell, url["broken"])
        rebooting = machine.wait_for(r"onair: update\.rebooting [^\n]*idle", 120)
        try:
            machine.process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            machine.power_cut()
        entries = boot_entries(t, disk)
        if not check("9 update: a build whose onair cannot start installs into slot A, which boots next, once (onair-3-a+1.conf); "
                     "the board reboots into it by itself (update.reboot = idle)",
                     status in (0, None) and rebooting and entries == ["onair-2-b.conf", "onair-3-a+1.conf"],
                     f"exit {status}: {output.strip()[-600:]} / {entries} / {console_tail(machine.text())}"):
            return

        # Boot 6: A cannot start onair; the deadline sends the board back as soon as onair
        # has failed to start 5 times, without waiting out the grace.
        machine = t.Machine(disk, 6, shell=True)
        started = time.monotonic()
        try:
            machine.process.wait(timeout=DEADLINE_SECONDS + 300)
        except subprocess.TimeoutExpired:
            pass
        gave_up = re.search(r"onair-update-deadline: [^\n]*back to the other slot", machine.text())
        check("9 update: in slot A onair cannot start; the board gives the slot up once onair failed to start 5 times or more, and reboots by itself",
              machine.process.poll() is not None and gave_up and re.search(r"failed to start \d+ times", gave_up.group(0)), (gave_up.group(0) if gave_up else machine.text()[-1200:]))
        timings["broken slot given up after (s)"] = round(time.monotonic() - started, 1)
        if machine.process.poll() is None:
            machine.power_cut()

        # Boot 7: B again, saying so.
        machine = t.Machine(disk, 7, shell=True)
        check_back_on_b(t, machine, "9 update: the board comes back to slot B by itself and says the update was rolled back, and why")
        after = data_files(machine.shell)
        changed = sorted(name for name in before if after.get(name) != before[name])
        check("9 update: the streams and recordings on the data partition are byte-identical through updates and a rollback",
              before and not changed, f"{len(before)} files, changed or gone: {changed[:5]}")
        machine.shutdown()
        machine = None
    finally:
        if machine is not None:
            machine.power_cut()
        t.remove_boot_file(disk, "test-shell.conf")
