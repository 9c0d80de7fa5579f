#!/usr/bin/env python3
"""Import cycles between the modules of one crate.

Usage: module_cycles.py CRATE_SRC_DIR [ALLOWED_MODULE ...]

Builds the graph of a crate's modules from the paths its code names
(`crate::a::b`, `use crate::{a, b::c}`, `super::x`; comments and the
`#[cfg(test)] mod tests` at a file's end are left out), one node per file,
and prints every strongly connected component of more than one module.
Edges between a module and its own submodules are not counted (a parent
declares its children). A cycle lying wholly inside an ALLOWED_MODULE
(e.g. `block`) is reported but not counted. Exits 1 when a counted cycle
is left.

Issue 45: `.ci/module_cycles.py crates/storage/src block` must find none.
"""
import os
import re
import sys

# Names the crate root re-exports, mapped to the module they come from.
REEXPORTS = {
    "Storage": "storage",
    "StorageError": "error",
    "StorageConfig": "config",
    "StorageStats": "stats",
    "Snapshot": "snapshot",
    "EmbeddedBackend": "backend",
    "QueryConfig": "config",
}

PATH = re.compile(r"crate::([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)")
GROUP = re.compile(r"use crate::\{([^;]*)\};", re.S)
SUPER = re.compile(r"super::([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)")


def modules(root):
    """Module path ("a::b", "" for the root) -> file."""
    found = {}
    for dirpath, _, files in os.walk(root):
        for f in files:
            if not f.endswith(".rs"):
                continue
            parts = os.path.relpath(os.path.join(dirpath, f), root)[:-3].split("/")
            if parts[-1] == "mod":
                parts = parts[:-1]
            if parts == ["lib"]:
                parts = []
            found["::".join(parts)] = os.path.join(dirpath, f)
    return found


def source(path):
    text = open(path, encoding="utf-8").read()
    cut = text.find("#[cfg(test)]\nmod tests")
    if cut >= 0:
        text = text[:cut]
    return "\n".join(l for l in text.split("\n") if not l.lstrip().startswith("//"))


def graph(mods):
    names = set(mods)

    def resolve(path):
        segs = path.split("::")
        if segs[0] in REEXPORTS:
            segs = REEXPORTS[segs[0]].split("::") + segs[1:]
        best = None
        for i in range(1, len(segs) + 1):
            if "::".join(segs[:i]) in names:
                best = "::".join(segs[:i])
        return best

    edges = {m: set() for m in mods}
    for m, f in mods.items():
        text = source(f)
        targets = [x.group(1) for x in PATH.finditer(text)]
        for g in GROUP.finditer(text):
            for item in g.group(1).split(","):
                item = item.strip().strip("{} \n")
                if item and item != "self":
                    targets.append(item.split("::")[0] if "{" in item else item)
        # `super` is the parent of the module path, whichever file holds it.
        parent = m.split("::")[:-1] if m else []
        for x in SUPER.finditer(text):
            targets.append("::".join(parent + x.group(1).split("::")))
        for t in targets:
            r = resolve(t)
            if r is None or r == m or r == "" or m == "":
                continue
            if m.startswith(r + "::") or r.startswith(m + "::"):
                continue
            edges[m].add(r)
    return edges


def components(edges):
    """Tarjan's strongly connected components."""
    sys.setrecursionlimit(10000)
    index, low, stack, on, out = {}, {}, [], set(), []

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
            out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    allowed = sys.argv[2:]
    edges = graph(modules(sys.argv[1]))
    counted = 0
    for comp in components(edges):
        if len(comp) < 2:
            continue
        inside = [a for a in allowed if all(x == a or x.startswith(a + "::") for x in comp)]
        label = f"allowed (inside {inside[0]})" if inside else "cycle"
        counted += 0 if inside else 1
        print(f"{label}: {' '.join(comp)}")
        for a in comp:
            print(f"    {a} -> {' '.join(sorted(b for b in edges[a] if b in comp))}")
    print(f"{counted} cycle(s)")
    return 1 if counted else 0


if __name__ == "__main__":
    sys.exit(main())
