# SPDX-License-Identifier: GPL-2.0
"""Instructions a kernel executes for one file operation, per function.

Two uses, both from tools/bench/count-instructions:

  gdb -batch -x count-instructions.py   (COUNT_* in the environment)
      attached to QEMU's gdb stub, for each operation that count_ops runs
      in the guest: waits for the marker of a round, single-steps the
      next kernel entry until it returns to user space, and counts the
      instructions of each kernel function (by the guest's kallsyms).
      Writes COUNT_OUT (JSON).

  python3 count-instructions.py report OUT.md TITLE_LINE STOCK.json SERIES.json ...
      the report: per operation the two kernels' totals and the
      functions whose counts differ.

QEMU steps with interrupts masked, so a tick does not land in a count;
the fewest of the measured rounds is kept, as a round may still pay for
something else's work (a per-CPU counter's flush, a slab refill).
"""
import bisect
import collections
import json
import os
import sys

KERNEL_HALF = 1 << 63


def count(gdb):
    port = os.environ["COUNT_PORT"]
    ops = os.environ["COUNT_OPS"].split()
    rounds = int(os.environ["COUNT_ROUNDS"])
    syms = []
    with open(os.environ["COUNT_KALLSYMS"]) as f:
        for line in f:
            addr, kind, name = line.split()[:3]
            if kind in "tTwW":
                syms.append((int(addr, 16), name))
    if not syms:
        raise SystemExit("count-instructions: the guest's kallsyms has no text symbols")
    syms.sort()
    addrs = [a for a, _ in syms]
    addr_of = {name: a for a, name in syms}

    def breakpoint_at(name):
        gdb.execute("hbreak *%#x" % addr_of[name], to_string=True)

    def step_kernel_entry():
        """Counts of the next kernel entry, from its first instruction."""
        gdb.execute("delete", to_string=True)
        breakpoint_at("entry_SYSCALL_64")
        breakpoint_at("asm_exc_page_fault")
        gdb.execute("continue", to_string=True)
        gdb.execute("delete", to_string=True)
        counts = collections.Counter()
        total = 0
        while True:
            pc = int(gdb.parse_and_eval("$pc")) & ((1 << 64) - 1)
            if pc < KERNEL_HALF:
                break
            counts[syms[bisect.bisect_right(addrs, pc) - 1][1]] += 1
            total += 1
            gdb.execute("stepi", to_string=True)
        return {"total": total, "functions": dict(counts)}

    gdb.execute("set pagination off")
    gdb.execute("target remote 127.0.0.1:%s" % port, to_string=True)
    results = {}
    breakpoint_at("__x64_sys_membarrier")
    # the guest waits for this file before its first operation
    open(os.environ["COUNT_GO"], "w").close()
    for op in ops:
        gdb.execute("delete", to_string=True)
        breakpoint_at("__x64_sys_membarrier")
        # the marker's round: regs->dx of the pt_regs the syscall gets
        runs = []
        while len(runs) < rounds - 1:
            gdb.execute("continue", to_string=True)
            regs = int(gdb.parse_and_eval("$rdi"))
            marker_round = int(gdb.parse_and_eval("*(unsigned long *)%#x" % (regs + 96)))
            # round 1 warms up (first allocations, first lookups)
            if marker_round >= 2:
                runs.append(step_kernel_entry())
                breakpoint_at("__x64_sys_membarrier")
        best = min(runs, key=lambda r: r["total"])
        best["rounds"] = [r["total"] for r in runs]
        results[op] = best
        print("count-instructions: %s %s" % (op, best["rounds"]), flush=True)
    with open(os.environ["COUNT_OUT"], "w") as f:
        json.dump(results, f)
    gdb.execute("delete", to_string=True)
    gdb.execute("detach", to_string=True)


def report(out, title, paths):
    names = [os.path.basename(p).rsplit(".", 1)[0] for p in paths]
    data = [json.load(open(p)) for p in paths]
    base = data[0]
    lines = [title, ""]
    lines.append("| operation | " + " | ".join(names) + " | " +
                 " | ".join("%s - %s" % (n, names[0]) for n in names[1:]) + " |")
    lines.append("|---" * (2 * len(names)) + "|")
    for op in base:
        totals = [d[op]["total"] for d in data]
        lines.append("| %s | %s | %s |" % (
            op, " | ".join("%d" % t for t in totals),
            " | ".join("%+d (%.3fx)" % (t - totals[0], t / totals[0]) for t in totals[1:])))
    lines += ["", "Functions whose counts differ (%s against %s), the largest differences first:" %
              (names[-1], names[0]), ""]
    for op in base:
        a, b = base[op]["functions"], data[-1][op]["functions"]
        diff = sorted(((b.get(f, 0) - a.get(f, 0), f) for f in set(a) | set(b)
                       if b.get(f, 0) != a.get(f, 0)), key=lambda x: (-abs(x[0]), x[1]))
        shown = ", ".join("%s %+d" % (f, d) for d, f in diff[:8]) or "none"
        lines.append("- %s: %s" % (op, shown))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "report":
    if len(sys.argv) < 6:
        raise SystemExit("usage: count-instructions.py report OUT.md TITLE_LINE BASE.json OTHER.json...")
    report(sys.argv[2], sys.argv[3], sys.argv[4:])
else:
    import gdb  # noqa: E402 (only inside gdb)
    count(gdb)
