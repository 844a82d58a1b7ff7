"""Helpers of the guest tool tests: TAP output, running the tools."""
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import traceback

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BIN = TOP + "/build/bin"
TIMEOUT = 300
TRACEFS = "/sys/kernel/tracing"
# The programs for allocation events of 5 arguments (no ramp_orders): the
# loader takes them only where the 6-argument ones cannot load
EVENTS5_PROGS = ["alloc_folio5", "alloc_fallback5"]


class BailOut(Exception):
    """A step the rest of the tests need failed."""


class TAP:
    def __init__(self):
        self.passed = self.failed = 0
        # An exception or a bail-out stops the run as one failure and
        # still prints the totals, so that make test names where it stopped.
        sys.excepthook = self._stopped

    def _stopped(self, kind, value, tb):
        for line in traceback.format_exception(kind, value, tb):
            print("# " + line.rstrip().replace("\n", "\n# "), flush=True)
        self.check(False, "the tests stopped early: %s: %s" % (kind.__name__, value))
        print("%d passed, %d failed" % (self.passed, self.failed), flush=True)

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
        raise BailOut("%s: %s" % (" ".join(args), res.stderr))
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


def drawn(lines):
    """Has shmemtop's live view drawn its column header?"""
    return len(lines) > 4 and lines[4].startswith("NAME")


class LiveView:
    """shmemtop's live view with @args in a detached tmux session (a server
    of its own) @width x @height: screen() is what it shows (with
    @escapes, its attributes as ANSI sequences), keys() types,
    wait() polls the screen until @cond(lines) holds (@timeout seconds: a
    hang guard, not a bound), close() ends it.

    Each view's server listens on a socket in a directory of its own:
    kill-server returns before its server has gone, and a new session on
    a reused name could reach the dying one ("server exited
    unexpectedly")."""

    def __init__(self, args, width=130, height=24):
        self.socket_dir = tempfile.mkdtemp(prefix="shmemtop-live-view.")
        self.tmux = ["tmux", "-S", self.socket_dir + "/socket"]
        run(self.tmux + ["new-session", "-d", "-x", str(width), "-y", str(height),
                         shlex.join([BIN + "/shmemtop", *args])], check=True)

    def screen(self, escapes=False):
        # with the attributes, the spaces they cover too (-N): a reverse bar
        return run(self.tmux + ["capture-pane", "-p", *(["-e", "-N"] if escapes else [])]
                   ).stdout.split("\n")

    def keys(self, *keys):
        run(self.tmux + ["send-keys", *keys], check=True)

    def wait(self, cond, timeout=120):
        """(whether @cond held, the screen's lines then)"""
        deadline = time.monotonic() + timeout
        while True:
            lines = self.screen()
            if cond(lines):
                return True, lines
            if time.monotonic() > deadline:
                return False, lines
            time.sleep(0.1)

    def close(self):
        run(self.tmux + ["kill-server"])
        shutil.rmtree(self.socket_dir)


def our_programs(loaded=False, section=""):
    """The object's program names (of sections starting with @section);
    with @loaded, those still loaded.

    The kernel frees a detached tracing program asynchronously (deferred
    work, then an RCU grace period), so @loaded waits for them to go
    (120 s at most: a hang guard) and returns what is left then."""
    with open(TOP + "/bpf/shmem.bpf.c") as f:
        names = [name for sec, name in re.findall(
            r'^SEC\("([^"]+)"\)\nint BPF_PROG\((\w+)', f.read(), re.M)
            if sec.startswith(section)]
    if not loaded:
        return names
    deadline = time.monotonic() + 120
    while True:
        res = run(["bpftool", "-j", "prog", "show"], check=True)
        left = [p["name"] for p in json.loads(res.stdout)
                if p.get("name") in names]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


def bpffs_leftovers(expected=()):
    return [n for n in os.listdir("/sys/fs/bpf") if n not in expected]


def exporter_scrape(opts, port, workload=None):
    """(serving, text): one scrape of an exporter started with @opts on
    @port, after @workload.  It says first what this kernel cannot
    observe, if anything, then that it serves, once loaded and bound."""
    exporter = subprocess.Popen([BIN + "/shmem-exporter", "-P", str(port)] + opts,
                                stderr=subprocess.PIPE, text=True)
    try:
        serving = any("serving" in exporter.stderr.readline() for _ in range(2))
        if serving and workload:
            run(workload, check=True)
        return serving, run(["curl", "-sf", "http://127.0.0.1:%d/metrics" % port]).stdout
    finally:
        exporter.terminate()
        exporter.wait()


def traced(events, fn):
    """@fn() with the kernel's shmem trace events @events on in tracefs:
    (what it returned, each event as a dict of its fields, with "event"
    its name and "ramp" whether it ends in the ramp flag)"""
    def enable(value):
        # tracing_on too: the kernel tests before leave it off
        for path in ["tracing_on"] + ["events/shmem/%s/enable" % e for e in events]:
            with open("%s/%s" % (TRACEFS, path), "w") as f:
                f.write(value)
    with open(TRACEFS + "/trace", "w"):
        pass
    enable("1")
    try:
        result = fn()
    finally:
        enable("0")
    parsed = []
    with open(TRACEFS + "/trace") as f:
        for line in f:
            m = re.search(r" (shmem_\w+): (.*)$", line)
            if not m:
                continue
            words = m.group(2).split()
            ramp = len(words) % 2 == 1 and words[-1] == "ramp"
            fields = dict(zip(words[0::2], words[1::2]))
            fields.update(event=m.group(1), ramp=ramp)
            parsed.append(fields)
    return result, parsed


def events_of(events, path):
    """The traced @events of the file at @path (its device and inode)"""
    st = os.stat(path)
    dev = "%d:%d" % (os.major(st.st_dev), os.minor(st.st_dev))
    return [e for e in events if e.get("dev") == dev and int(e["ino"], 16) == st.st_ino]
