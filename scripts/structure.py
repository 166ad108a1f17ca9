#!/usr/bin/env python3
"""The shape of src/ as docs/architecture.md promises it (make test runs this first).

- The import graph is a ladder: the layers are the block of src/lib.rs's opening comment,
  bottom row last; a module imports only from its own row or the rows below (an import is any
  `crate::<module>` path outside comments and outside the `#[cfg(any(test, feature =
  "pg_test"))]` module of tests), and no two modules import each other, directly or round a
  circle. A folder (src/catalog/) is one module.
- Every file of src/ opens with a comment (`//!`) saying what it owns, and has at most 450
  lines, every function at most 80.
- Every internal function executable by PUBLIC (as tests/pg_regress/expected/acl.out shows
  them) is in docs/security.md's table of them, with why and its own check.

`--report` prints the figures instead of failing on them (for a closing note): modules, imports,
circles, imports that run up, the largest files and functions, lines per folder.
"""
import collections, os, re, sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
MAX_FILE, MAX_FN = 450, 80
TESTS = '#[cfg(any(test, feature = "pg_test"))]'


def rust_files():
    for d, _, names in os.walk(ROOT):
        for n in sorted(names):
            if n.endswith(".rs"):
                yield os.path.join(d, n)


def module_of(path):
    parts = os.path.relpath(path, ROOT).split(os.sep)
    return parts[0] if len(parts) > 1 else parts[0][:-3]


def code_of(path):
    """The file's code: no comments, no test module."""
    text = open(path).read()
    cut = text.find(TESTS)
    if cut >= 0:
        text = text[:cut]
    return re.sub(r"//[^\n]*", "", text)


def imports(modules):
    edges = collections.defaultdict(collections.Counter)
    for path in rust_files():
        here, code = module_of(path), code_of(path)
        named = re.findall(r"crate::([a-z_][a-z0-9_]*)", code)
        for group in re.findall(r"crate::\{([^;]*?)\};", code, re.S):
            named += re.findall(r"(?:^|[{,\s])([a-z_][a-z0-9_]*)", group)
        for m in named:
            if m in modules and m != here:
                edges[here][m] += 1
    return edges


def circles(modules, edges):
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(modules):
        if v not in index:
            visit(v)
    return found


def layers():
    """{module: row} from lib.rs's block (row 0: the bottom)."""
    text = open(os.path.join(ROOT, "lib.rs")).read()
    block = re.search(r"//! ```text\n(.*?)//! ```", text, re.S).group(1)
    rows = []
    for line in block.splitlines():
        line = line[len("//! "):] if line.startswith("//! ") else ""
        label, names = line[:14], line[14:].split()
        if label.strip():
            rows.append([])
        rows[-1] += [n.rstrip("/") for n in names]
    rows.reverse()
    return {m: i for i, row in enumerate(rows) for m in row}


def functions(path):
    """(name, lines) of each function of the file (rustfmt's layout: the closing brace at the
    indentation of `fn`)."""
    lines = open(path).read().split("\n")
    sig = re.compile(r"^(\s*)(?:pub(?:\([^)]*\))? )?(?:const )?(?:unsafe )?(?:extern \"[^\"]*\" )?fn (\w+)")
    for i, line in enumerate(lines):
        m = sig.match(line)
        if not m:
            continue
        indent = m.group(1)
        for j in range(i, len(lines)):
            if lines[j].rstrip().endswith(";") and "{" not in "".join(lines[i:j + 1]):
                break
            if lines[j] == indent + "}" or (j == i and line.rstrip().endswith("}")):
                yield m.group(2), j - i + 1, i + 1
                break


def public_internals():
    """The internal functions acl.out shows executable by PUBLIC, by name."""
    acl = open(os.path.join(ROOT, "..", "tests", "pg_regress", "expected", "acl.out")).read()
    names = set()
    for line in acl.split("\n"):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) > 2 and cells[0].startswith("jsonb_ttl_internal.") and cells[1] == "t":
            names.add(cells[0][len("jsonb_ttl_internal."):].split("(")[0])
    return names


def main():
    report = "--report" in sys.argv
    modules = {module_of(p) for p in rust_files()}
    edges = imports(modules)
    problems = []
    rows = layers()
    for m in sorted(modules - {"lib"} - set(rows)):
        problems.append(f"module {m} is in no row of src/lib.rs's layers")
    up = [(a, b) for a in sorted(edges) for b in sorted(edges[a])
          if a in rows and b in rows and rows[b] > rows[a]]
    for a, b in up:
        problems.append(f"{a} imports {b}, a row above it")
    for c in circles(modules, edges):
        problems.append("a circle of imports: " + " ".join(c))
    security = open(os.path.join(ROOT, "..", "docs", "security.md")).read()
    table = security[security.find("### The internals executable by PUBLIC"):]
    for name in sorted(public_internals()):
        if f"`{name}`" not in table.split("\n## ")[0]:
            problems.append(f"jsonb_ttl_internal.{name} is executable by PUBLIC (acl.out) and "
                            "not in docs/security.md's table of such functions")
    sizes, fns, folders = [], [], collections.Counter()
    for path in rust_files():
        rel = os.path.relpath(path, ROOT)
        n = open(path).read().count("\n")
        sizes.append((n, rel))
        folders[os.path.dirname(rel) or "."] += n
        if not open(path).read().startswith("//!"):
            problems.append(f"src/{rel}: no opening comment (//!) saying what it owns")
        if n > MAX_FILE:
            problems.append(f"src/{rel}: {n} lines (at most {MAX_FILE})")
        for name, length, at in functions(path):
            fns.append((length, f"src/{rel}:{at} {name}"))
            if length > MAX_FN:
                problems.append(f"src/{rel}:{at}: fn {name} has {length} lines (at most {MAX_FN})")
    if report:
        print(f"modules {len(modules)}, imports between them {sum(len(e) for e in edges.values())}")
        print("circles:", circles(modules, edges) or "none")
        print("imports that run up:", up or "none")
        print("largest files:", sorted(sizes)[-3:])
        print("largest functions:", sorted(fns)[-3:])
        print("lines per folder:", dict(sorted(folders.items())), "total", sum(folders.values()))
        print("problems:", len(problems))
        return 0
    for p in problems:
        print("structure:", p)
    if problems:
        print("structure: see scripts/structure.py and docs/architecture.md")
        return 1
    print(f"structure: {len(modules)} modules in {len(set(rows.values()))} rows, no circle, "
          f"no import up; files <= {MAX_FILE} lines, functions <= {MAX_FN}")
    return 0


sys.exit(main())
