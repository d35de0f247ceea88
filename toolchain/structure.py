#!/usr/bin/env python3
"""The shape of onair's source, in the numbers its restructuring is judged by.

Prints one line per measure: where a stream's file names are spelled, which modules
import Glibc and read errno, the @unchecked Sendable count, files and functions past
their size limits, sleeps in unit tests, and the module imports that must not exist.
`make structure` runs it; the counts are a place to look, the limits are the project's
(docs/ARCHITECTURE.md, Size).
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "Sources")
TESTS = os.path.join(ROOT, "Tests")

# A stream's and the data directory's names: the ones StreamLayout owns.
LAYOUT_NAMES = re.compile(r'index\.m3u8|playlist\.m3u8|iframes\.m3u8|init\.mp4|seg/|(?<!api)/streams\b|^streams/|'
                          r'(?<!api)/recordings\b|^recordings/|\.corrupt|streams\.json|devices\.json|\.mp4\.part')
STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
FUNCTION = re.compile(r'^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|private|fileprivate|internal|'
                      r'static|final|override|mutating|nonmutating|convenience|required|'
                      r'nonisolated|package|class)\s+)*(func\s+[^\s(<]+|init[?!]?|deinit)\b')
# Real sleeps: usleep/nanosleep/sleep and Thread.sleep (a ManualClock's `sleep(until:)`
# moves virtual time, and a fake clock may define one).
SLEEP = re.compile(r'(^|[^A-Za-z_.])(usleep|nanosleep|sleep)\(|Thread\.sleep')
FAKE_SLEEP = re.compile(r'func sleep\(')


def swift_files(top):
    for directory, _, names in os.walk(top):
        for name in sorted(names):
            if name.endswith(".swift"):
                yield os.path.join(directory, name)


def code_lines(path):
    """The file's lines with comments and string literals blanked (braces in them do not count)."""
    out = []
    in_block = 0
    for line in open(path, encoding="utf-8"):
        text = ""
        i = 0
        in_string = False
        while i < len(line):
            c = line[i]
            if in_block:
                if line.startswith("*/", i):
                    in_block -= 1
                    i += 2
                    continue
                if line.startswith("/*", i):
                    in_block += 1
                    i += 2
                    continue
                i += 1
                continue
            if in_string:
                if c == "\\":
                    i += 2
                    continue
                if c == '"':
                    in_string = False
                i += 1
                continue
            if line.startswith("//", i):
                break
            if line.startswith("/*", i):
                in_block += 1
                i += 2
                continue
            if c == '"':
                in_string = True
                text += '""'
                i += 1
                continue
            text += c
            i += 1
        out.append(text)
    return out


def long_functions(path, limit):
    lines = code_lines(path)
    found = []
    for number, line in enumerate(lines):
        match = FUNCTION.match(line)
        if not match:
            continue
        depth = 0
        opened = False
        for end in range(number, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if "{" in lines[end]:
                opened = True
            if opened and depth <= 0:
                break
            if not opened and end > number + 12:
                break  # a protocol requirement: no body
        if opened and end - number + 1 > limit:
            found.append((end - number + 1, match.group(1), number + 1))
    return found


def module_of(path):
    return os.path.relpath(path, SOURCES).split(os.sep)[0]


def main():
    layout, glibc, errno_sites, unchecked, fd_ints = [], set(), [], [], []
    big, functions = [], []
    imports = {}
    for path in swift_files(SOURCES):
        rel = os.path.relpath(path, ROOT)
        text = open(path, encoding="utf-8").read()
        lines = text.splitlines()
        module = module_of(path)
        if os.path.basename(path) != "StreamLayout.swift":
            for number, line in enumerate(lines, 1):
                code = line.split("//")[0] if not line.lstrip().startswith("///") else ""
                if any(LAYOUT_NAMES.search(literal) for literal in STRING.findall(code)):
                    layout.append(f"{rel}:{number}")
        code = "\n".join(code_lines(path))
        if re.search(r"^import Glibc", text, re.M):
            glibc.add(rel)
        for match in re.finditer(r"\berrno\b", code):
            errno_sites.append(module)
        unchecked += [rel for _ in re.finditer(r"@unchecked Sendable", code)]
        fd_ints += [rel for _ in re.finditer(r"\b(fd|descriptor|handle)\s*:\s*Int32\b", code)]
        for name in re.findall(r"^import (\w+)", text, re.M):
            imports.setdefault(module, set()).add(name)
        limit = 300 if module == "Publishing" else 400
        if len(lines) > limit:
            big.append(f"{len(lines)} {rel}")
        functions += [f"{n} {rel}:{line} {name}" for n, name, line in long_functions(path, 60)]

    sleeps = []
    for path in swift_files(TESTS):
        rel = os.path.relpath(path, ROOT)
        if rel.startswith("Tests/IntegrationTests") or rel.startswith("Tests/TestSupport"):
            continue
        for number, line in enumerate(code_lines(path), 1):
            if SLEEP.search(line) and not FAKE_SLEEP.search(line):
                sleeps.append(f"{rel}:{number}")

    modules = {}
    for site in errno_sites:
        modules[site] = modules.get(site, 0) + 1
    glibc_modules = sorted({module_of(os.path.join(ROOT, p)) for p in glibc})
    verbose = "-v" in sys.argv

    def report(name, count, items=()):
        print(f"{name}: {count}")
        if verbose:
            for item in items:
                print(f"    {item}")

    report("layout names spelled outside StreamLayout (lines)", len(layout), layout)
    report("files importing Glibc", len(glibc), sorted(glibc))
    print(f"    modules: {' '.join(glibc_modules)}")
    report("errno read (sites)", len(errno_sites),
           [f"{m}: {n}" for m, n in sorted(modules.items())])
    print(f"    modules: {' '.join(sorted(modules))}")
    report("raw Int32 descriptors (declarations)", len(fd_ints), sorted(set(fd_ints)))
    report("@unchecked Sendable", len(unchecked), sorted(unchecked))
    report("files over 300 lines in Publishing, 400 elsewhere", len(big), sorted(big, reverse=True))
    report("functions over 60 lines", len(functions), sorted(functions, reverse=True))
    report("sleeps in unit tests", len(sleeps), sleeps)
    print(f"Streaming imports Publishing: {'Publishing' in imports.get('Streaming', set())}")


if __name__ == "__main__":
    main()
