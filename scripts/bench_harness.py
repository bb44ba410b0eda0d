"""What the side-by-side benchmarks (scripts/bench-*.py) share: running one variant while
timing its first content line and sampling the bridge's peak RSS, and interleaving the variants
so machine noise hits them alike."""
import os, signal, statistics, subprocess, sys, tempfile, threading, time


def vm_hwm_kb(pid):
    """Peak resident set (VmHWM) of `pid` in KiB, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run(argv, stdin_bytes, is_first_content, env, cwd, sample_rss, close_stdin_on=None):
    """Runs `argv` once; returns (seconds to the first content line, total seconds, peak KiB).

    `stdin_bytes` None means stdin is /dev/null. With `close_stdin_on`, stdin stays open until a
    line contains that byte string (what a client that may still answer approvals does)."""
    start = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    if stdin_bytes is not None:
        p.stdin.write(stdin_bytes)
        p.stdin.flush()
        if close_stdin_on is None:
            p.stdin.close()
    first = None
    peak = 0
    for line in p.stdout:
        if first is None and is_first_content(line):
            first = time.monotonic() - start
        if close_stdin_on is not None and close_stdin_on in line and not p.stdin.closed:
            p.stdin.close()
        if sample_rss:
            peak = max(peak, vm_hwm_kb(p.pid) or 0)
    p.wait()
    return first, time.monotonic() - start, peak


def interleave(variants, runs, home_subdirs, warmup=0):
    """Runs each variant `runs` times, round robin, each run in a fresh home (with `home_subdirs`
    created); `variants` maps a name to `f(home) -> (first, total, peak, ...)`. Returns
    `{name: [(first, total, peak, ...), ...]}` without the first `warmup` rounds (run, then
    dropped: page cache, lazily built state); exits when a run produced no content."""
    results = {k: [] for k in variants}
    kinds = list(variants)
    with tempfile.TemporaryDirectory() as root:
        for i in range((warmup + runs) * len(kinds)):
            kind = kinds[i % len(kinds)]
            home = os.path.join(root, f"h{i}")
            for d in ("",) + tuple(home_subdirs):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            figures = variants[kind](home)
            if figures[0] is None:
                sys.exit(f"{kind} run {i} produced no content")
            if i >= warmup * len(kinds):
                results[kind].append(figures)
    return results


def median(results, kind, index):
    """Median of field `index` (0 first content, 1 total) over the runs of `kind`."""
    return statistics.median(r[index] for r in results[kind])


def peak_mib(results, kind):
    """Largest peak RSS of `kind`'s runs, in MiB."""
    return max(r[2] for r in results[kind]) / 1024


RUNNING = []  # the processes of the current run (a benchmark kills them when a run times out)


def timed_out(signum, frame):
    for p in RUNNING:
        p.kill()
    sys.exit("a run timed out (a turn that never ended?)")


def guarded(f, seconds):
    """`f(home)` with a watchdog of `seconds`: when it fires, the run's processes are killed
    and the benchmark exits."""
    def go(home):
        RUNNING.clear()
        signal.signal(signal.SIGALRM, timed_out)
        signal.alarm(seconds)
        try:
            return f(home)
        finally:
            signal.alarm(0)
    return go


def children(pid):
    """The pids of the children of `pid` (forked by any of its threads); [] once it is gone."""
    kids = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return kids


def exe_of(pid):
    """The executable of `pid` (resolved), or "" once it is gone."""
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


class TreeMemory:
    """The peak memory of the process tree under `root`, split into the CLI's part and the
    rest (the adapter's): a thread walks the tree every `interval` s and keeps each process's
    VmHWM (its own peak resident set, so a peak between two walks is not missed). A process
    belongs to the CLI when `is_cli(pid)` is true for it or for one of its ancestors."""

    def __init__(self, root, is_cli, interval=0.02):
        self.root, self.is_cli, self.interval = root, is_cli, interval
        self.peaks = {}  # pid -> [peak KiB, belongs to the CLI, executable]
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        while not self.done.wait(self.interval):
            self.sample()

    def sample(self):
        stack = [(self.root, False)]
        while stack:
            pid, in_cli = stack.pop()
            hwm = vm_hwm_kb(pid)
            if hwm is None:
                continue
            # Asked at every walk: a child is its parent's copy until it has exec'd the CLI.
            entry = self.peaks.setdefault(pid, [0, False, ""])
            entry[0] = max(entry[0], hwm)
            entry[1] = entry[1] or in_cli or self.is_cli(pid)
            entry[2] = exe_of(pid) or entry[2]
            stack += [(c, entry[1]) for c in children(pid)]

    def stop(self):
        """Stops sampling after a last walk (call it while the tree still runs); returns
        (the tree's KiB, the CLI's KiB), each process at its own peak."""
        self.done.set()
        self.thread.join()
        self.sample()
        tree = sum(e[0] for e in self.peaks.values())
        cli = sum(e[0] for e in self.peaks.values() if e[1])
        return tree, cli

    def left(self):
        """The processes seen in the tree that still run (the same pid and executable)."""
        return [pid for pid, e in self.peaks.items() if e[2] and exe_of(pid) == e[2]]


def spawn(argv, env, cwd):
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env, cwd=cwd)
    RUNNING.append(p)
    return p


class Driver:
    """A process with stdin kept open, driven a line at a time (a session client)."""

    def __init__(self, argv, env, cwd, is_first_content, is_end):
        self.p = spawn(argv, env, cwd)
        self.is_first_content, self.is_end = is_first_content, is_end

    def turn(self, line):
        """Writes `line`, reads to the turn's end; returns (first content s, total s, end line)."""
        start = time.monotonic()
        self.p.stdin.write(line.encode() + b"\n")
        self.p.stdin.flush()
        first = None
        for out in self.p.stdout:
            if first is None and self.is_first_content(out):
                first = time.monotonic() - start
            if self.is_end(out):
                return first, time.monotonic() - start, out
        sys.exit(f"{self.p.args[0]} exited (status {self.p.wait()}) before the turn ended")

    def close(self):
        self.p.stdin.close()
        self.p.wait()
