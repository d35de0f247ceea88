#!/usr/bin/env python3
"""The shape of onair's source, in the numbers its restructuring is judged by.

Prints one line per measure: where a stream's file names are spelled, which modules
import Glibc and read errno, the @unchecked Sendable count, files and functions past
their size limits, sleeps in each test folder, and the module imports that must not exist.
`make structure` runs it; the counts are a place to look, the limits are the project's
(docs/ARCHITECTURE.md, Size).

It fails (exit 1) when the one map drifts from the code: a target's imports differ from
its dependencies in Package.swift, docs/ARCHITECTURE.md's module table differs from
Package.swift (a row per target, its imports column the dependencies), the thread list
there differs from the threads Sources names, anything under Sources depends on a target
under Tests, or a unit test sleeps.
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


def package_targets():
    """Package.swift's targets: name -> (kind, dependencies, folder)."""
    text = open(os.path.join(ROOT, "Package.swift"), encoding="utf-8").read()
    targets = {}
    for match in re.finditer(r'\.(target|executableTarget|testTarget|systemLibrary)\(name: "([^"]+)"', text):
        kind, name = match.group(1), match.group(2)
        depth, end = 1, match.end()
        while depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        call = text[match.end():end]
        listed = re.search(r"dependencies:\s*\[([^\]]*)\]", call)
        path = re.search(r'path:\s*"([^"]+)"', call)
        folder = path.group(1) if path else ("Tests/" if kind == "testTarget" else "Sources/") + name
        targets[name] = (kind, re.findall(r'"([^"]+)"', listed.group(1)) if listed else [], folder)
    return targets


def imports_of(folder, names):
    found = set()
    for path in swift_files(os.path.join(ROOT, folder)):
        text = open(path, encoding="utf-8").read()
        found |= set(re.findall(r"^(?:@testable )?import (\w+)", text, re.M))
    return found & names


def map_problems(targets):
    """Where Package.swift, the imports and docs/ARCHITECTURE.md disagree."""
    problems = []
    names = set(targets)
    for name, (kind, dependencies, folder) in sorted(targets.items()):
        if kind == "systemLibrary":
            continue
        imported = imports_of(folder, names)
        for missing in sorted(imported - set(dependencies)):
            problems.append(f"Package.swift: {name} imports {missing}, which its dependencies do not list")
        for unused in sorted(set(dependencies) - imported):
            problems.append(f"Package.swift: {name} lists {unused} as a dependency and never imports it")
        if folder.startswith("Sources"):
            for dependency in dependencies:
                if targets.get(dependency, ("", [], ""))[2].startswith("Tests"):
                    problems.append(f"Package.swift: {name} (under Sources) depends on {dependency}, under Tests")
    doc = open(os.path.join(ROOT, "docs", "ARCHITECTURE.md"), encoding="utf-8").read()
    table = doc[doc.index("| target | holds |"):]
    table = table[:table.index("\n\n")].splitlines()[2:]
    listed = set()
    for row in table:
        cells = [cell.strip() for cell in row.strip().strip("|").split(" | ")]
        column = set() if cells[-1] == "—" else {item.strip() for item in cells[-1].split(",")}
        for name in re.findall(r"`([^`]+)`", cells[0]):
            listed.add(name)
            if name not in targets:
                problems.append(f"docs/ARCHITECTURE.md: the module table lists {name}, which Package.swift has not")
            elif column != set(targets[name][1]):
                problems.append(f"docs/ARCHITECTURE.md: {name}'s imports are {', '.join(targets[name][1]) or '—'} in Package.swift, "
                                f"not {cells[-1]}")
    for name, (kind, _, _) in sorted(targets.items()):
        if kind != "testTarget" and name not in listed:
            problems.append(f"docs/ARCHITECTURE.md: the module table has no row for {name}")
    # Threads: every name Sources gives a thread, and every name the list gives, found in
    # the other (an interpolated part, `onair-publish-\(index)`, matches any word: `-N`).
    section = doc[doc.index("## Threads"):]
    section = section[:section.index("\n## ", 1)]
    documented = set(re.findall(r"`(onair-[A-Za-z0-9-]+)`", section))
    named = set()
    for path in swift_files(SOURCES):
        for line in code_lines_with_strings(path):
            named |= set(THREAD_NAME.findall(line))
    patterns = {name: re.compile("^" + re.sub(r"\\\\\\\(.*?\\\)", "[A-Za-z0-9]+", re.escape(name)) + "$") for name in named
                if name not in THREAD_EXPANSIONS}
    for name in named & set(THREAD_EXPANSIONS):
        for expanded in THREAD_EXPANSIONS[name]:
            patterns[expanded] = re.compile("^" + re.escape(expanded) + "$")
    for name, pattern in sorted(patterns.items()):
        if not any(pattern.match(thread) for thread in documented):
            problems.append(f"docs/ARCHITECTURE.md: the thread list does not name {name}, which Sources starts")
    for thread in sorted(documented):
        if not any(pattern.match(thread) for pattern in patterns.values()):
            problems.append(f"docs/ARCHITECTURE.md: the thread list names {thread}, which no thread in Sources is called")
    return problems


# A thread's name as Sources gives it: `name: "onair-…"` (WorkerThread, StoppableThread,
# SerialWorker, Scheduler's default).
THREAD_NAME = re.compile(r'\bname(?:: String)?\s*[:=]\s*"(onair-[^"]*)"')


# A name made whole of a value, which would match any: what the value is.
THREAD_EXPANSIONS = {"onair-\\(output.name)": ["onair-live", "onair-recording"]}


def code_lines_with_strings(path):
    return [line.split("//")[0] for line in open(path, encoding="utf-8")]


def module_of(path):
    return os.path.relpath(path, SOURCES).split(os.sep)[0]


def main():
    layout, glibc, errno_sites, unchecked, fd_ints = [], set(), [], [], []
    big, functions = [], []
    imports = {}
    for path in swift_files(SOURCES):
        rel = os.path.relpath(path, ROOT)
        module = module_of(path)
        if module == "TestSupport":
            continue  # the tests' and the fuzzer's drivers, not the product
        text = open(path, encoding="utf-8").read()
        lines = text.splitlines()
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

    # Sleeps in every folder of tests (and TestSupport's): the integration tests poll a
    # real binary, bounded; a unit test has a manual clock and must not sleep.
    sleeps, unit_sleeps = {}, []
    for path in list(swift_files(TESTS)) + list(swift_files(os.path.join(SOURCES, "TestSupport"))):
        rel = os.path.relpath(path, ROOT)
        folder = rel.split(os.sep)[1]
        for number, line in enumerate(code_lines(path), 1):
            if SLEEP.search(line) and not FAKE_SLEEP.search(line):
                sleeps.setdefault(folder, []).append(f"{rel}:{number}")
                if folder not in ("IntegrationTests", "TestSupport"):
                    unit_sleeps.append(f"{rel}:{number}")

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
    report("sleeps in tests", sum(len(found) for found in sleeps.values()), [])
    for folder, found in sorted(sleeps.items()):
        report(f"    {folder}", len(found), found)
    print(f"Streaming imports Publishing: {'Publishing' in imports.get('Streaming', set())}")
    targets = package_targets()
    print(f"targets: {sum(kind != 'systemLibrary' and kind != 'testTarget' for kind, _, _ in targets.values())} "
          f"(and {sum(kind == 'testTarget' for kind, _, _ in targets.values())} of tests)")
    problems = map_problems(targets)
    problems += [f"{site}: a unit test sleeps (use the manual clock)" for site in unit_sleeps]
    if "Publishing" in imports.get("Streaming", set()):
        problems.append("Streaming imports Publishing")
    for problem in problems:
        print(f"make structure: {problem}")
    if problems:
        sys.exit(1)


if __name__ == "__main__":
    main()
