"""What the side-by-side benchmarks (scripts/bench-*.py) share: running one variant while
timing its first content line and sampling the bridge's peak RSS, and interleaving the variants
so machine noise hits them alike."""
import os, statistics, subprocess, sys, tempfile, time


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


def interleave(variants, runs, home_subdirs):
    """Runs each variant `runs` times, round robin, each run in a fresh home (with `home_subdirs`
    created); `variants` maps a name to `f(home) -> (first, total, peak)`. Returns
    `{name: [(first, total, peak), ...]}`; exits when a run produced no content."""
    results = {k: [] for k in variants}
    kinds = list(variants)
    with tempfile.TemporaryDirectory() as root:
        for i in range(runs * len(kinds)):
            kind = kinds[i % len(kinds)]
            home = os.path.join(root, f"h{i}")
            for d in ("",) + tuple(home_subdirs):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            first, total, peak = variants[kind](home)
            if first is None:
                sys.exit(f"{kind} run {i} produced no content")
            results[kind].append((first, total, peak))
    return results


def median(results, kind, index):
    """Median of field `index` (0 first content, 1 total) over the runs of `kind`."""
    return statistics.median(r[index] for r in results[kind])


def peak_mib(results, kind):
    """Largest peak RSS of `kind`'s runs, in MiB."""
    return max(r[2] for r in results[kind]) / 1024


RUNNING = []  # the processes of the current run (a benchmark kills them when a run times out)


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
