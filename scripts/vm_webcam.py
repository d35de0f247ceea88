"""make vm-test, scenario 7: what the USB webcam sent (scripts/uvc-camera.c) against what
onair streamed, read from the stream's pictures and the board's console and journal.

uvc-camera draws each picture's index as 16 blocks across the middle of the picture
(rows 3/8 to 5/8 of its height, the most significant bit on the left, white for a one);
onair may scale the picture or crop its top and bottom, so the blocks are read in the
middle tenth of the rows, in the middle half of each block's width.
"""
import re
import subprocess

BITS = 16


def picture_size(path):
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=width,height",
                          "-of", "csv=p=0", path], capture_output=True, text=True).stdout.split()[0].split(",")
    return int(out[0]), int(out[1])


def indices(path):
    """Each decoded picture's index, in order; None where the blocks cannot be read."""
    width, height = picture_size(path)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-fps_mode", "passthrough",
                          "-f", "rawvideo", "-pix_fmt", "gray", "-"], capture_output=True).stdout
    size = width * height
    rows = range(int(height * 0.45), max(int(height * 0.55), int(height * 0.45) + 1))
    found = []
    for start in range(0, len(raw) - size + 1, size):
        picture = raw[start:start + size]
        value = 0
        for k in range(BITS):
            left, right = k * width // BITS, (k + 1) * width // BITS
            columns = range(left + (right - left) // 4, right - (right - left) // 4)
            samples = [picture[row * width + x] for row in rows for x in columns]
            mean = sum(samples) / max(1, len(samples))
            if mean > 150:
                value |= 1 << (BITS - 1 - k)
            elif mean > 90:
                value = None
                break
        found.append(value)
    return found


def bad_pictures(first, last, bad_every):
    """The indices uvc-camera sends broken between FIRST and LAST (its --bad-every rule)."""
    if bad_every <= 0:
        return set()
    return {i for i in range(first, last + 1) if i % bad_every == bad_every // 2}


def judge(found, bad_every, unplug_after, repeated_by_onair, said):
    """What the decoded indices say: (ok, details). In order, each once (a repeat only
    as often as onair says it repeated a picture), none of the broken ones, and none
    missing but the broken ones, the few pictures the driver had taken in when the device
    went away (at most 4), and as many as onair says it lost while the stream ran: SAID is
    the change in /api/status over the stream (dropped: a thread fell behind;
    driver_dropped: gaps in the driver's sequence numbers, which also count the broken
    pictures the driver threw away itself; corrupt: broken ones onair was given and
    skipped, which may be more than were sent broken, when the transfer broke a good one;
    skipped: pictures the constant frame rate's grid had no slot for, from stream.ended)."""
    readable = [i for i in found if i is not None]
    if len(readable) < 20:
        return False, {"readable": len(readable), "unreadable": len(found) - len(readable)}
    repeats = sum(1 for a, b in zip(readable, readable[1:]) if a == b)
    backwards = [(a, b) for a, b in zip(readable, readable[1:]) if b < a]
    seen = set(readable)
    first, last = readable[0], readable[-1]
    bad = bad_pictures(first, last, bad_every)
    missing = sorted(set(range(first, last + 1)) - seen - bad)
    at_unplug = [i for i in missing if unplug_after - 4 <= i < unplug_after + 2]
    elsewhere = [i for i in missing if i not in at_unplug]
    # The broken pictures onair never saw went into the driver's gaps: they explain no
    # other loss.
    explained = (said["dropped"] + said["driver_dropped"] - max(0, len(bad) - said["corrupt"])
                 + max(0, said["corrupt"] - len(bad)) + said.get("skipped", 0))
    details = {"first": first, "last": last, "pictures": len(found), "unreadable": len(found) - len(readable),
               "repeated": repeats, "backwards": backwards[:5], "broken sent": len(bad),
               "broken shown": sorted(bad & seen)[:10], "lost at the unplug": at_unplug, "lost elsewhere": elsewhere[:20],
               "onair said": said, "losses onair explains": explained, "onair repeated": repeated_by_onair}
    ok = (not backwards and not (bad & seen) and len(elsewhere) <= max(0, explained) and len(at_unplug) <= 4
          and repeats <= repeated_by_onair)
    return ok, details


def journal_field(log, event, field):
    """The value of FIELD in the last journal line of EVENT (onair's key=value lines)."""
    value = None
    for line in log.splitlines():
        if f"event={event} " in line or line.endswith(f"event={event}"):
            match = re.search(rf"\b{field}=(\"[^\"]*\"|\S+)", line)
            if match:
                value = match.group(1).strip('"')
    return value
