#!/usr/bin/env python3
"""The board's kernel modules, and nothing else, in the image's root (make image).

  image/modules.py trim ROOT LIST [--also NAME ...] [--dtb FILE ...]
  image/modules.py check ROOT LIST [--also NAME ...]

LIST is board/<name>/modules: one entry per line, `#` starts a comment.
  name        a module (`snd-aloop` and `snd_aloop` are the same module)
  dir/        every module below kernel/dir/ (`drivers/virtio/`)
  !name       left out on purpose: a driver the board's device tree names that onair
              does not need (Bluetooth, say); without it `trim` refuses to drop a driver
              the device tree asks for
Every entry must name a module of the kernel: a renamed or vanished module fails the build
instead of a board booting without its disk.

trim keeps the listed modules, the --also ones (modules-load.d), and what they need to
load: modules.dep's dependencies, the soft dependencies of modules.softdep and
modules.weakdep (ext4's crc32c, say), resolved through modules.alias. With --dtb, every
enabled node of each flattened device tree whose compatible string a module of the kernel
drives must be kept or left out with `!` (Devicetree Specification v0.4 §5 for the
format). It deletes every other module file and empty folder; depmod is run afterwards
(image/build.sh), so modules.dep and modules.alias name only what is there.

check reads a trimmed root: every listed and --also module is there with its
dependencies, and modules.dep names no missing file (make image-check).

Errors are one line each, naming the list's file and line; exit status 2.
"""
import fnmatch
import os
import struct
import sys

SUFFIXES = (".ko", ".ko.xz", ".ko.zst", ".ko.gz")


def fail(messages):
    for message in messages:
        print(f"image/modules.py: {message}", file=sys.stderr)
    sys.exit(2)


def canonical(name):
    return name.replace("-", "_")


def module_name(path):
    base = os.path.basename(path)
    for suffix in SUFFIXES:
        if base.endswith(suffix):
            return canonical(base[: -len(suffix)])
    return canonical(base)


class Kernel:
    """One kernel's module tree: /usr/lib/modules/VERSION (depmod's files)."""

    def __init__(self, directory):
        self.directory = directory
        self.version = os.path.basename(directory)
        self.paths = {}   # module name -> path relative to the tree (kernel/...)
        self.deps = {}    # module name -> [module name]
        with open(os.path.join(directory, "modules.dep")) as f:
            for line in f:
                path, _, deps = line.partition(":")
                name = module_name(path)
                self.paths[name] = path
                self.deps[name] = [module_name(d) for d in deps.split()]
        self.aliases = []  # (pattern, module name)
        alias_file = os.path.join(directory, "modules.alias")
        if os.path.exists(alias_file):
            with open(alias_file) as f:
                for line in f:
                    words = line.split()
                    if len(words) == 3 and words[0] == "alias":
                        self.aliases.append((words[1], canonical(words[2])))
        self.soft = {}    # module name -> [name or alias]
        for file in ("modules.softdep", "modules.weakdep"):
            path = os.path.join(directory, file)
            if not os.path.exists(path):
                continue
            with open(path) as f:
                for line in f:
                    words = line.split()
                    if len(words) >= 3 and words[0] in ("softdep", "weakdep"):
                        wanted = [w for w in words[2:] if w not in ("pre:", "post:")]
                        self.soft.setdefault(canonical(words[1]), []).extend(wanted)

    def resolve(self, name):
        """Modules that a name or alias (as modprobe takes it) loads."""
        if canonical(name) in self.paths:
            return [canonical(name)]
        return sorted({module for pattern, module in self.aliases
                       if module in self.paths and fnmatch.fnmatchcase(name, pattern)})

    def closure(self, names):
        keep, todo = set(), list(names)
        while todo:
            name = todo.pop()
            if name in keep:
                continue
            keep.add(name)
            todo.extend(self.deps.get(name, []))
            for wanted in self.soft.get(name, []):
                todo.extend(self.resolve(wanted))
        return keep


def kernels(root):
    base = os.path.join(root, "usr/lib/modules")
    if not os.path.isdir(base):
        base = os.path.join(root, "lib/modules")
    found = [os.path.join(base, v) for v in sorted(os.listdir(base))
             if os.path.exists(os.path.join(base, v, "modules.dep"))] if os.path.isdir(base) else []
    if not found:
        fail([f"{root}: no kernel module tree (usr/lib/modules/VERSION/modules.dep)"])
    return [Kernel(d) for d in found]


def read_list(path):
    """[(line number, entry)] of the board's list."""
    if not os.path.exists(path):
        fail([f"{path}: missing (each board lists its kernel modules)"])
    entries = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            for word in line.split("#", 1)[0].split():
                entries.append((number, word))
    return entries


def wanted(kernel, list_path, entries, also, trimmed=False):
    """(module names the list and --also keep, names left out on purpose). In a TRIMMED
    tree the names left out are gone, as they should be."""
    keep, left_out, errors = set(), set(), []
    for number, entry in entries:
        where = f"{list_path}:{number}"
        if entry.startswith("!"):
            name = canonical(entry[1:])
            if name not in kernel.paths and not trimmed:
                errors.append(f"{where}: '{entry[1:]}' is no module of linux {kernel.version}")
            left_out.add(name)
        elif entry.endswith("/"):
            prefix = "kernel/" + entry
            found = [n for n, p in kernel.paths.items() if p.startswith(prefix)]
            if not found:
                errors.append(f"{where}: no module below kernel/{entry} in linux {kernel.version}")
            keep.update(found)
        elif canonical(entry) in kernel.paths:
            keep.add(canonical(entry))
        else:
            errors.append(f"{where}: '{entry}' is no module of linux {kernel.version}")
    for name in also:
        found = kernel.resolve(name)
        if not found:
            errors.append(f"modules-load.d names '{name}', which is no module of linux {kernel.version}")
        keep.update(found)
    if errors:
        fail(errors)
    return keep, left_out


# --- flattened device trees (Devicetree Specification v0.4 §5) -------------------------

def fdt_nodes(blob):
    """[(path, {property: bytes})] of every node of a flattened device tree."""
    magic, _, off_struct, off_strings = struct.unpack_from(">IIII", blob, 0)
    if magic != 0xD00DFEED:
        raise ValueError("not a flattened device tree")
    def string(offset):
        end = blob.index(b"\0", off_strings + offset)
        return blob[off_strings + offset:end].decode()
    nodes, stack, pos = [], [], off_struct
    while True:
        token, = struct.unpack_from(">I", blob, pos)
        pos += 4
        if token == 1:  # FDT_BEGIN_NODE
            end = blob.index(b"\0", pos)
            name = blob[pos:end].decode()
            pos = (end + 4) & ~3
            path = "/" if not stack else (stack[-1][0].rstrip("/") + "/" + name)
            stack.append((path, {}))
            nodes.append(stack[-1])
        elif token == 2:  # FDT_END_NODE
            stack.pop()
        elif token == 3:  # FDT_PROP
            length, name_offset = struct.unpack_from(">II", blob, pos)
            pos += 8
            stack[-1][1][string(name_offset)] = blob[pos:pos + length]
            pos = (pos + length + 3) & ~3
        elif token == 4:  # FDT_NOP
            continue
        elif token == 9:  # FDT_END
            return nodes
        else:
            raise ValueError(f"unknown token {token:#x} at {pos - 4}")


def strings(value):
    return [s.decode(errors="replace") for s in value.split(b"\0") if s]


def dtb_drivers(kernel, dtb):
    """[(node path, compatible, module)] for the enabled nodes of DTB that a module drives.

    The modalias the kernel announces for a node is of:N<name>T<type>C<compatible>...
    (drivers/of/device.c, of_modalias), matched against modules.alias as udev does."""
    found = []
    with open(dtb, "rb") as f:
        blob = f.read()
    # Indexed by the first compatible a pattern names (of:N*T*C<compatible>[C*]), so each
    # node is matched against a handful of patterns, not thousands.
    by_compatible = {}
    for pattern, module in kernel.aliases:
        if pattern.startswith("of:") and module in kernel.paths:
            key = pattern.split("T*C", 1)[1].split("C*", 1)[0] if "T*C" in pattern else ""
            by_compatible.setdefault(key if "*" not in key else "", []).append((pattern, module))
    for path, props in fdt_nodes(blob):
        status = strings(props.get("status", b"okay"))
        if "compatible" not in props or (status and status[0] not in ("okay", "ok")):
            continue
        compatibles = strings(props["compatible"])
        name = path.rsplit("/", 1)[-1].split("@", 1)[0]
        kind = strings(props.get("device_type", b"")) or ["<NULL>"]
        modalias = f"of:N{name}T{kind[0]}" + "".join(f"C{c}" for c in compatibles)
        candidates = by_compatible.get("", []) + [a for c in compatibles for a in by_compatible.get(c, [])]
        for pattern, module in candidates:
            if fnmatch.fnmatchcase(modalias, pattern):
                matched = next((c for c in compatibles if f"C{c}" in pattern), compatibles[0])
                found.append((path, matched, module))
    return found


def parse_args(args):
    options = {"--also": [], "--dtb": []}
    positional, current = [], None
    for arg in args:
        if arg in options:
            current = arg
        elif current:
            options[current].append(arg)
        else:
            positional.append(arg)
    return positional, options


def size(paths):
    return sum(os.path.getsize(p) for p in paths)


def trim(root, list_path, also, dtbs):
    entries = read_list(list_path)
    for kernel in kernels(root):
        keep, left_out = wanted(kernel, list_path, entries, also)
        errors = []
        for dtb in dtbs:
            for node, compatible, module in dtb_drivers(kernel, dtb):
                if module not in keep and module not in left_out:
                    errors.append(f"{list_path}: {os.path.basename(dtb)} enables {node} "
                                  f"({compatible}), driven by '{module}': keep it or leave it out with '!{module}'")
        if errors:
            fail(sorted(set(errors)))
        keep = kernel.closure(keep)
        before = [os.path.join(kernel.directory, p) for p in kernel.paths.values()]
        gone = [os.path.join(kernel.directory, p) for n, p in kernel.paths.items() if n not in keep]
        total, removed = size(before), size(gone)
        for path in gone:
            os.unlink(path)
        for folder, dirs, files in os.walk(os.path.join(kernel.directory, "kernel"), topdown=False):
            if not dirs and not files:
                os.rmdir(folder)
            elif not os.listdir(folder):
                os.rmdir(folder)
        order = os.path.join(kernel.directory, "modules.order")
        if os.path.exists(order):
            with open(order) as f:
                lines = [line for line in f if module_name(line.strip()) in keep]
            with open(order, "w") as f:
                f.writelines(lines)
        print(f"image/modules.py: linux {kernel.version}: kept {len(keep)} of {len(kernel.paths)} modules, "
              f"{(total - removed) / 1e6:.1f} of {total / 1e6:.1f} MB ({os.path.basename(list_path)})")


def check(root, list_path, also):
    entries = read_list(list_path)
    problems = []
    for kernel in kernels(root):
        keep, left_out = wanted(kernel, list_path, entries, also, trimmed=True)
        problems += [f"linux {kernel.version}: '{name}' is left out on purpose but still there"
                     for name in sorted(left_out & set(kernel.paths))]
        for name in sorted(kernel.closure(keep)):
            if name not in kernel.paths:
                problems.append(f"linux {kernel.version}: '{name}' is needed but not in modules.dep")
        for name, path in sorted(kernel.paths.items()):
            if not os.path.exists(os.path.join(kernel.directory, path)):
                problems.append(f"linux {kernel.version}: modules.dep names {path}, which is not there")
        if not problems:
            print(f"image/modules.py: linux {kernel.version}: {len(kernel.paths)} modules, "
                  f"the {len(kernel.closure(keep))} the list names or needs all present")
    if problems:
        fail(problems[:10] + ([f"... and {len(problems) - 10} more"] if len(problems) > 10 else []))


def main():
    positional, options = parse_args(sys.argv[1:])
    if len(positional) != 3 or positional[0] not in ("trim", "check"):
        fail(["usage: modules.py trim|check ROOT LIST [--also NAME ...] [--dtb FILE ...]"])
    command, root, list_path = positional
    if command == "trim":
        trim(root, list_path, options["--also"], options["--dtb"])
    else:
        check(root, list_path, options["--also"])


if __name__ == "__main__":
    main()
