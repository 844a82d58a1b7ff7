"""Helpers of the guest tool tests: TAP output, running the tools."""
import json
import os
import re
import shlex
import subprocess
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = TOP + "/build/bin"
TIMEOUT = 300


class TAP:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, cond, msg):
        self.passed += bool(cond)
        self.failed += not cond
        print("%s %d - %s" % ("ok" if cond else "not ok",
                              self.passed + self.failed, msg), flush=True)
        return cond

    def done(self):
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)
        raise SystemExit(1 if self.failed else 0)


def run(args, check=False, **kw):
    """Run a command; a hang is a failure, not a stuck test run."""
    try:
        res = subprocess.run(args, capture_output=True, text=True,
                             timeout=TIMEOUT, **kw)
    except subprocess.TimeoutExpired as e:
        res = subprocess.CompletedProcess(args, 124, e.stdout or "",
                                          "timed out after %d s\n" % TIMEOUT)
    if check and res.returncode:
        raise SystemExit("Bail out! %s: %s" % (" ".join(args), res.stderr))
    return res


def sh(cmd):
    return run(["sh", "-c", cmd], check=True)


def mount_tmpfs(path, opts):
    os.makedirs(path, exist_ok=True)
    sh("mount -t tmpfs -o %s tools-test %s" % (opts, shlex.quote(path)))
    return path


def shmemtop_json(cmd, options=()):
    """shmemtop traces while @cmd runs; the long interval makes the report
    at the command's exit the only one.  Every line of its output must be
    JSON (the command's own output goes elsewhere): one that is not makes
    the reports [] and is shown."""
    res = run([BIN + "/shmemtop", "--json", "-i", "3600", *options, "--", *cmd])
    try:
        reports = [json.loads(line) for line in res.stdout.splitlines()]
    except ValueError:
        print("# not JSON on shmemtop's stdout: %r" % res.stdout[:200])
        reports = []
    return res, reports


def write_from_mapping(d):
    """shmemtop --json while a process writes 64K to a file on a tmpfs
    mounted at @d from an untouched shared mapping of another file there
    (issue 23, defect 6: each page of the mapping is faulted in inside the
    write), in a cgroup of its own that shmemtop traces."""
    mount_tmpfs(d, "size=16M")
    cgroup = "/sys/fs/cgroup/shmem-write-from-mapping"
    os.mkdir(cgroup)
    script = ("import mmap, os, sys\n"
              "with open(sys.argv[1] + '/cgroup.procs', 'w') as f:\n"
              "    f.write(str(os.getpid()))\n"
              "a = os.open(sys.argv[2], os.O_RDWR | os.O_CREAT)\n"
              "os.ftruncate(a, 65536)\n"
              "b = os.open(sys.argv[3], os.O_WRONLY | os.O_CREAT)\n"
              "assert os.write(b, mmap.mmap(a, 65536)) == 65536\n")
    res, reports = shmemtop_json(["python3", "-c", script, cgroup, d + "/mapped",
                                  d + "/written"], ["-c", cgroup])
    os.rmdir(cgroup)
    sh("umount %s" % d)
    return res, reports


def hist_counts(text):
    """shmemhist's latency sections: title -> count, or the line in place
    of a histogram"""
    counts = {}
    for part in text.split("\nLatency, ")[1:]:
        title, _, body = part.partition(":\n")
        m = re.search(r"count (\d+), average", body)
        counts[title] = int(m.group(1)) if m else body.splitlines()[0].strip()
    return counts


def our_programs(loaded=False, section=""):
    """The object's program names (of sections starting with @section);
    with @loaded, those still loaded.

    The kernel frees a detached tracing program asynchronously (deferred
    work, then an RCU grace period), so @loaded waits up to 20 s for them
    to go and returns what is left then."""
    with open(TOP + "/bpf/shmem.bpf.c") as f:
        names = [name for sec, name in re.findall(
            r'^SEC\("([^"]+)"\)\nint BPF_PROG\((\w+)', f.read(), re.M)
            if sec.startswith(section)]
    if not loaded:
        return names
    deadline = time.monotonic() + 20
    while True:
        res = run(["bpftool", "-j", "prog", "show"], check=True)
        left = [p["name"] for p in json.loads(res.stdout)
                if p.get("name") in names]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def bpffs_leftovers(expected=()):
    return [n for n in os.listdir("/sys/fs/bpf") if n not in expected]
