//! Spawning provider CLIs: own process group, scrubbed environment, stderr tail, group kill.
//!
//! Every child runs as the leader of a new process group, so the whole tree it starts (tool
//! shells, MCP servers) can be signalled at once. [`ChildProcess::terminate`] sends SIGTERM to
//! the group, waits a grace period, then SIGKILLs the group; dropping a [`ChildProcess`] that was
//! not reaped SIGKILLs the group as a last resort, so an early return cannot leave orphans.
//!
//! stderr is always drained on its own task (an undrained pipe deadlocks a chatty child once
//! 64 KiB are buffered) and its last lines are kept for error reports.
//!
//! # When the owning process is killed (Linux)
//!
//! A SIGKILL gives the owner no chance to stop the group. Two things still end it:
//!
//! * the CLI itself gets `PR_SET_PDEATHSIG` (SIGKILL when the thread that spawned it exits);
//! * a **watchdog** per child stops the rest of the group (tool shells, MCP servers: the CLI's
//!   own children, which `PDEATHSIG` does not reach). It is forked from the child before `exec`
//!   (no helper binary needed, so it works the same for library users), detached (its parent
//!   exits at once, so it is neither the CLI's child nor the owner's), in its own process group
//!   (so signals meant for the CLI's group do not stop it), named `bridge-watchdog`, and holds
//!   the read end of a pipe whose only write end lives in the owning process (close-on-exec,
//!   and closed in the watchdog). Any death of the owner, SIGKILL included, closes that write
//!   end; the watchdog then SIGKILLs the CLI's group and exits. It also exits on its own within
//!   [`WATCHDOG_POLL`] once the group is gone (checked with `kill(-pgid, 0)`, so a group whose
//!   orphaned members are zombies nobody reaps keeps it until the owner exits), so it never
//!   outlives the group it guards by more than that.
//!
//! `PR_SET_CHILD_SUBREAPER` is no alternative: it makes the owner adopt orphaned descendants
//! while it lives, but it dies with the owner, and the orphans of a killed owner go to init.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::lines::{LineItem, LineReader};
use crate::record::{RecordedReader, RecordedWriter, Recording};

/// Environment variables never passed to a child: they change how Node or the dynamic loader
/// behave (a plugin's `NODE_OPTIONS=--inspect` makes every Node CLI stall on a debugger port)
/// or leak the bridge's own invocation context. Keep one with [`CommandSpec::allow_env`].
pub const SCRUBBED_ENV: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_INSPECT",
    "NODE_DEBUG",
    "NODE_REPL_EXTERNAL_MODULE",
    "ELECTRON_RUN_AS_NODE",
    "BUN_OPTIONS",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "DYLD_INSERT_LIBRARIES",
    "DYLD_LIBRARY_PATH",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    // ai-bridge's own switches: meaningless to the CLIs.
    "CLAUDE_USE_STDIN",
    "CODEX_USE_STDIN",
    "GROK_USE_STDIN",
    "KIMI_USE_STDIN",
    "OPENCODE_USE_STDIN",
    "PI_USE_STDIN",
    "OMP_USE_STDIN",
    "DSH_USE_STDIN",
];

/// Prefixes of scrubbed variables (`npm_config_*` and friends from `npm run` / `npx`).
pub const SCRUBBED_ENV_PREFIXES: &[&str] = &["npm_", "NPM_CONFIG_", "DYLD_", "LD_"];

/// How often a child's watchdog checks whether the group it guards is gone (Linux).
pub const WATCHDOG_POLL: Duration = Duration::from_millis(250);

/// Name of the watchdog processes (`/proc/PID/comm`), so tools and tests can count them.
pub const WATCHDOG_NAME: &str = "bridge-watchdog";

#[cfg(target_os = "linux")]
mod watchdog {
    //! The group watchdog (see the module docs of `process`).

    use std::sync::OnceLock;

    /// The liveness pipe `(read, write)`: both ends close-on-exec, created once per process
    /// and never closed, so the write end closes exactly when the process dies.
    static PIPE: OnceLock<Option<(libc::c_int, libc::c_int)>> = OnceLock::new();

    pub(super) fn pipe() -> Option<(libc::c_int, libc::c_int)> {
        *PIPE.get_or_init(|| {
            let mut fds = [0 as libc::c_int; 2];
            // SAFETY: `fds` has room for the two descriptors pipe2 writes.
            let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
            (rc == 0).then_some((fds[0], fds[1]))
        })
    }

    /// fork(2) without the libc wrapper (no atfork handlers: only raw system calls are safe
    /// in the child of a multithreaded process).
    unsafe fn raw_fork() -> libc::c_long {
        // SAFETY: clone with only SIGCHLD and no new stack is fork(2); the argument order of
        // the remaining (zero) arguments differs per architecture but zeros are zeros.
        unsafe {
            libc::syscall(
                libc::SYS_clone,
                libc::SIGCHLD as libc::c_ulong,
                0usize,
                0usize,
                0usize,
                0usize,
            )
        }
    }

    /// Starts the watchdog of the calling process's group. Runs in the child between fork and
    /// exec, after it became its group's leader: async-signal-safe calls only, never fails
    /// the spawn (without a watchdog the CLI still has `PDEATHSIG`).
    ///
    /// # Safety
    /// Only call between fork and exec (`pre_exec`), with the descriptors from [`pipe`].
    pub(super) unsafe fn start(read_fd: libc::c_int, write_fd: libc::c_int) {
        // SAFETY (whole block): raw system calls on our own process and descriptors.
        unsafe {
            let group = libc::getpid();
            let middle = raw_fork();
            if middle < 0 {
                return;
            }
            if middle > 0 {
                // The CLI-to-be: reap the short-lived middle process, then exec.
                let mut status = 0;
                while libc::waitpid(middle as libc::pid_t, &mut status, 0) < 0
                    && *libc::__errno_location() == libc::EINTR
                {}
                return;
            }
            // The middle process: fork the watchdog and leave, so the watchdog is re-parented
            // (to init or a subreaper) instead of being a child of the CLI.
            if raw_fork() != 0 {
                libc::_exit(0);
            }
            watch(group, read_fd, write_fd)
        }
    }

    unsafe fn watch(group: libc::pid_t, read_fd: libc::c_int, write_fd: libc::c_int) -> ! {
        // SAFETY (whole block): raw system calls on our own process and descriptors.
        unsafe {
            libc::setpgid(0, 0);
            libc::prctl(
                libc::PR_SET_NAME,
                c"bridge-watchdog".as_ptr() as libc::c_ulong,
                0,
                0,
                0,
            );
            // Signal handlers inherited from the owner (its interrupt handling) must not keep a
            // watchdog alive.
            for signal in 1..32 {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    libc::signal(signal, libc::SIG_DFL);
                }
            }
            libc::chdir(c"/".as_ptr());
            // Keep only the pipe's read end (as fd 0): the CLI's stdio pipes and, above all,
            // the pipe's write end must not be held here.
            if libc::dup2(read_fd, 0) < 0 {
                libc::_exit(1);
            }
            if libc::syscall(libc::SYS_close_range, 1u32, u32::MAX, 0u32) != 0 {
                for fd in [1, 2, read_fd, write_fd] {
                    if fd != 0 {
                        libc::close(fd);
                    }
                }
            }
            let poll_ms = super::WATCHDOG_POLL.as_millis() as libc::c_int;
            loop {
                let mut fds = libc::pollfd {
                    fd: 0,
                    events: libc::POLLIN,
                    revents: 0,
                };
                let ready = libc::poll(&mut fds, 1, poll_ms);
                if ready > 0 {
                    // Nobody writes to the pipe: readable means end of file, so the owner is
                    // gone. Its group goes too.
                    libc::kill(-group, libc::SIGKILL);
                    libc::_exit(0);
                }
                if ready == 0
                    && libc::kill(-group, 0) != 0
                    && *libc::__errno_location() == libc::ESRCH
                {
                    libc::_exit(0);
                }
            }
        }
    }
}

/// How the child's stdin is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinMode {
    /// `/dev/null`: for one-shot CLIs that would otherwise wait for EOF.
    Null,
    /// A pipe the channel writes to (stream-json input, JSON-RPC).
    Piped,
}

/// Everything needed to start a child.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// Resolved path of the executable.
    pub program: PathBuf,
    /// Arguments (never the prompt: it goes over stdin or the provider protocol).
    pub args: Vec<OsString>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Variables to set (on top of the scrubbed inherited environment).
    pub env: Vec<(OsString, OsString)>,
    /// Extra inherited variables to remove.
    pub env_remove: Vec<OsString>,
    /// Scrubbed variables to keep anyway.
    pub allow_env: Vec<OsString>,
    /// Start from the bridge's environment (scrubbed); `false` starts from an empty one, with
    /// only [`CommandSpec::env`] (a probe that passes an explicit environment).
    pub inherit_env: bool,
    /// stdin connection.
    pub stdin: StdinMode,
    /// Where the child's stdin, stdout and stderr are also recorded (`--record`).
    pub record: Option<Arc<Recording>>,
    /// Files the child reads (a config that holds secrets, which must not be on its command
    /// line), kept until the child is dropped.
    pub files: Vec<Arc<PrivateFile>>,
}

/// A file only its owner can read (0600, in the temporary directory), deleted when the last
/// holder drops it: for what a CLI takes as a path and nobody else may see (an MCP config
/// whose servers carry tokens: a command line is readable by every user in `/proc`).
#[derive(Debug)]
pub struct PrivateFile {
    path: tempfile::TempPath,
}

impl PrivateFile {
    /// Writes `bytes` to a new private file named `<prefix>…<suffix>`.
    pub fn new(prefix: &str, suffix: &str, bytes: &[u8]) -> std::io::Result<Self> {
        use std::io::Write;
        // `tempfile` creates the file 0600 with O_EXCL.
        let mut file = tempfile::Builder::new()
            .prefix(prefix)
            .suffix(suffix)
            .tempfile()?;
        file.write_all(bytes)?;
        file.flush()?;
        Ok(PrivateFile {
            path: file.into_temp_path(),
        })
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl CommandSpec {
    /// A spec for `program` with no arguments, stdin null.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        CommandSpec {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            env_remove: Vec::new(),
            allow_env: Vec::new(),
            inherit_env: true,
            stdin: StdinMode::Null,
            record: None,
            files: Vec::new(),
        }
    }

    /// Appends an argument.
    pub fn arg(&mut self, arg: impl Into<OsString>) -> &mut Self {
        self.args.push(arg.into());
        self
    }

    /// Sets a child environment variable.
    pub fn env(&mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> &mut Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Whether an inherited variable is dropped before spawning.
    pub fn is_scrubbed(&self, key: &OsStr) -> bool {
        if self.allow_env.iter().any(|k| k == key) {
            return false;
        }
        if self.env_remove.iter().any(|k| k == key) {
            return true;
        }
        let Some(key) = key.to_str() else {
            return false;
        };
        is_scrubbed_env(key)
    }
}

/// Why a child could not be started.
#[derive(Debug, thiserror::Error)]
#[error("could not start {program}: {source}")]
pub struct SpawnError {
    /// The program that failed.
    pub program: String,
    /// The OS error.
    #[source]
    pub source: std::io::Error,
}

/// The last lines a child wrote to stderr.
#[derive(Debug, Default)]
pub struct StderrTail {
    lines: VecDeque<String>,
    bytes: usize,
}

impl StderrTail {
    const MAX_LINES: usize = 40;
    const MAX_BYTES: usize = 8 * 1024;
    const MAX_LINE: usize = 1024;

    fn push(&mut self, mut line: String) {
        if line.len() > Self::MAX_LINE {
            let mut cut = Self::MAX_LINE;
            while !line.is_char_boundary(cut) {
                cut -= 1;
            }
            line.truncate(cut);
            line.push('…');
        }
        self.bytes += line.len();
        self.lines.push_back(line);
        while self.lines.len() > Self::MAX_LINES || self.bytes > Self::MAX_BYTES {
            match self.lines.pop_front() {
                Some(old) => self.bytes -= old.len(),
                None => break,
            }
        }
    }

    /// The kept lines joined with `\n`.
    pub fn text(&self) -> String {
        self.lines.iter().cloned().collect::<Vec<_>>().join("\n")
    }
}

/// A running child that owns its process group.
#[derive(Debug)]
pub struct ChildProcess {
    child: Child,
    pgid: Option<i32>,
    reaped: bool,
    stderr_tail: Arc<Mutex<StderrTail>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    activity: tokio::sync::watch::Sender<u64>,
    record: Option<Arc<Recording>>,
    /// The spec's files, deleted once the child is gone.
    _files: Vec<Arc<PrivateFile>>,
}

/// How many stderr lines [`ChildProcess::spawn_with_stderr_lines`] buffers for a slow reader;
/// later lines are dropped from the forwarded copy (never from the tail) until it catches up.
pub const STDERR_LINES_BUFFER: usize = 1024;

impl ChildProcess {
    /// Spawns `spec` in a new process group with a scrubbed environment.
    pub fn spawn(spec: &CommandSpec) -> Result<ChildProcess, SpawnError> {
        Self::spawn_inner(spec, None)
    }

    /// Like [`ChildProcess::spawn`], and also forwards every stderr line (lossily decoded, at
    /// most 64 KiB each) to the returned receiver, for providers that print something a
    /// normalizer needs on stderr (a session id, a resume hint). The forwarded copy never
    /// blocks the child: when the reader falls [`STDERR_LINES_BUFFER`] lines behind, further
    /// lines are dropped from it (the stderr tail keeps them).
    pub fn spawn_with_stderr_lines(
        spec: &CommandSpec,
    ) -> Result<(ChildProcess, tokio::sync::mpsc::Receiver<String>), SpawnError> {
        let (tx, rx) = tokio::sync::mpsc::channel(STDERR_LINES_BUFFER);
        Ok((Self::spawn_inner(spec, Some(tx))?, rx))
    }

    fn spawn_inner(
        spec: &CommandSpec,
        lines: Option<tokio::sync::mpsc::Sender<String>>,
    ) -> Result<ChildProcess, SpawnError> {
        let mut command = Command::new(&spec.program);
        command.args(&spec.args);
        if let Some(cwd) = &spec.cwd {
            command.current_dir(cwd);
        }
        if spec.inherit_env {
            for (key, _) in std::env::vars_os() {
                if spec.is_scrubbed(&key) {
                    command.env_remove(&key);
                }
            }
        } else {
            command.env_clear();
        }
        for (key, value) in &spec.env {
            command.env(key, value);
        }
        command
            .stdin(match spec.stdin {
                StdinMode::Null => Stdio::null(),
                StdinMode::Piped => Stdio::piped(),
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        command.process_group(0);
        #[cfg(target_os = "linux")]
        {
            // If the bridge is SIGKILLed (no chance to stop the group), the kernel kills the
            // CLI. The signal fires when the spawning thread exits; tokio's worker threads
            // live as long as the runtime, which outlives every child we spawn.
            let parent = std::process::id();
            // The rest of the group is stopped by a watchdog (module docs).
            let pipe = watchdog::pipe();
            // SAFETY: the closure runs between fork and exec, after the child became its
            // group's leader, and only makes raw system calls (prctl, getppid, kill, and the
            // watchdog's fork, which uses nothing else).
            unsafe {
                command.pre_exec(move || {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    if libc::getppid() as u32 != parent {
                        libc::kill(libc::getpid(), libc::SIGKILL);
                    }
                    if let Some((read_fd, write_fd)) = pipe {
                        watchdog::start(read_fd, write_fd);
                    }
                    Ok(())
                });
            }
        }
        if let Some(recording) = &spec.record {
            recording.command(&spec.program, &spec.args);
        }
        let mut child = command.spawn().map_err(|source| SpawnError {
            program: spec.program.display().to_string(),
            source,
        })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let stderr_tail = Arc::new(Mutex::new(StderrTail::default()));
        let (activity, _) = tokio::sync::watch::channel(0u64);
        let mut stderr_task = None;
        if let Some(stderr) = child.stderr.take() {
            let tail = Arc::clone(&stderr_tail);
            let recording = spec.record.clone();
            let activity = activity.clone();
            stderr_task = Some(tokio::spawn(async move {
                let mut reader = LineReader::new(stderr, 64 * 1024);
                while let Ok(Some(item)) = reader.next_line().await {
                    activity.send_modify(|n| *n += 1);
                    let line = match item {
                        LineItem::Line { text, .. } => text,
                        LineItem::TooLong { bytes } => format!("[a {bytes}-byte line]"),
                    };
                    if let Some(recording) = &recording {
                        recording.stderr_line(&line);
                    }
                    if let Some(lines) = &lines {
                        // Full or closed: the reader is behind or gone; the tail still has it.
                        let _ = lines.try_send(line.clone());
                    }
                    if let Ok(mut tail) = tail.lock() {
                        tail.push(line);
                    }
                }
            }));
        }
        Ok(ChildProcess {
            child,
            pgid,
            reaped: false,
            stderr_tail,
            stderr_task,
            activity,
            record: spec.record.clone(),
            _files: spec.files.clone(),
        })
    }

    /// Takes the stdin pipe (present when spawned with [`StdinMode::Piped`]).
    pub fn take_stdin(&mut self) -> Option<RecordedWriter<ChildStdin>> {
        let recording = self.record.clone();
        self.child
            .stdin
            .take()
            .map(|stdin| RecordedWriter::new(stdin, recording))
    }

    /// Takes the stdout pipe.
    pub fn take_stdout(&mut self) -> Option<RecordedReader<ChildStdout>> {
        let recording = self.record.clone();
        self.child
            .stdout
            .take()
            .map(|stdout| RecordedReader::new(stdout, recording))
    }

    /// A receiver that changes whenever the child writes a stderr line (for idle deadlines).
    pub fn stderr_activity(&self) -> tokio::sync::watch::Receiver<u64> {
        self.activity.subscribe()
    }

    /// The last stderr lines.
    pub fn stderr_tail(&self) -> String {
        self.stderr_tail
            .lock()
            .map(|tail| tail.text())
            .unwrap_or_default()
    }

    /// The last stderr lines once the stderr pipe is drained, waiting at most `max_wait` (a
    /// grandchild may keep the pipe open). Use this for error reports after the child exited:
    /// the drain task may still be catching up with what the child wrote just before exiting.
    pub async fn settled_stderr_tail(&mut self, max_wait: Duration) -> String {
        if let Some(task) = self.stderr_task.as_mut()
            && tokio::time::timeout(max_wait, task).await.is_ok()
        {
            self.stderr_task = None;
        }
        self.stderr_tail()
    }

    /// The process group id (the leader's pid).
    pub fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// Sends `signal` to the whole process group. Errors (group already gone) are ignored.
    pub fn signal_group(&self, signal: i32) {
        #[cfg(unix)]
        if let Some(pgid) = self.pgid {
            // SAFETY: killpg has no memory-safety preconditions; a stale group yields ESRCH.
            unsafe {
                libc::killpg(pgid, signal);
            }
        }
        #[cfg(not(unix))]
        let _ = signal;
    }

    /// Waits for the leader to exit within `timeout`.
    pub async fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(timeout, self.child.wait()).await {
            Ok(Ok(status)) => {
                self.reaped(&status);
                Some(status)
            }
            _ => None,
        }
    }

    /// Waits for the leader to exit.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.reaped(&status);
        Ok(status)
    }

    /// The leader's exit status if it has exited, without waiting (a CLI that died between two
    /// turns of a session).
    pub fn try_exit_status(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().ok().flatten()?;
        self.reaped(&status);
        Some(status)
    }

    fn reaped(&mut self, status: &ExitStatus) {
        if !self.reaped
            && let Some(recording) = &self.record
        {
            recording.exit(&describe_exit(status));
        }
        self.reaped = true;
    }

    /// Ends the whole tree: SIGTERM to the group, `grace` to exit, then SIGKILL to the group.
    /// Returns the leader's exit status.
    pub async fn terminate(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal_group(libc::SIGTERM);
        let status = match self.wait_timeout(grace).await {
            Some(status) => Some(status),
            None => {
                self.signal_group(libc::SIGKILL);
                let _ = self.child.start_kill();
                self.wait_timeout(Duration::from_secs(5)).await
            }
        };
        // Members that outlived the leader (or ignored SIGTERM) go too.
        self.signal_group(libc::SIGKILL);
        status
    }

    /// After a normal exit, removes whatever the leader left behind in its group
    /// (tool subprocesses, MCP servers).
    pub fn sweep_group(&self) {
        self.signal_group(libc::SIGKILL);
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if !self.reaped {
            self.signal_group(libc::SIGKILL);
        }
    }
}

/// Resident memory of process `pid` and all its descendants, in bytes (`/proc` on Linux;
/// `None` elsewhere, or when `pid` is gone). A snapshot: the tree can change while it is read.
pub fn tree_rss_bytes(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let rss = rss_bytes;
        let own = rss(pid)?;
        // Parent links of every process; `comm` may hold spaces and parentheses, so the
        // fields are read after the last `)`.
        let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
                continue;
            };
            let Some(ppid) = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok())
            else {
                continue;
            };
            children.entry(ppid).or_default().push(child);
        }
        let mut total = own;
        let mut stack = children.remove(&pid).unwrap_or_default();
        while let Some(next) = stack.pop() {
            total += rss(next).unwrap_or(0);
            stack.extend(children.remove(&next).unwrap_or_default());
        }
        Some(total)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

/// Resident memory of process `pid` alone, in bytes (`/proc` on Linux; `None` elsewhere, or
/// when `pid` is gone).
pub fn rss_bytes(pid: u32) -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let statm = std::fs::read_to_string(format!("/proc/{pid}/statm")).ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * page_size())
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        None
    }
}

#[cfg(target_os = "linux")]
fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    u64::try_from(size).unwrap_or(4096)
}

/// What [`run_captured`] collected from a child that ran to its end (or to its deadline).
#[derive(Debug)]
pub struct Captured {
    /// The leader's exit status; `None` when the deadline passed (the group was killed).
    pub status: Option<ExitStatus>,
    /// stdout, at most the cap (the rest was read and dropped).
    pub stdout: Vec<u8>,
    /// stderr lines joined with `\n`, at most the cap.
    pub stderr: Vec<u8>,
    /// The deadline passed before the child exited.
    pub timed_out: bool,
}

/// Runs `spec` to its end under `timeout`: writes `input` to its stdin (when `spec` pipes
/// stdin) and closes it, reads stdout and the stderr lines up to `cap` bytes each until EOF and
/// exit; when the deadline passes the group is killed at once. Whatever the child left in its
/// group is swept afterwards. For short commands whose whole output is the answer (a version
/// probe, a model listing); CLIs that stream a turn run on [`crate::session`].
pub async fn run_captured(
    spec: &CommandSpec,
    input: &[u8],
    timeout: Duration,
    cap: usize,
) -> Result<Captured, SpawnError> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (mut child, mut stderr_lines) = spawn_retrying(spec).await?;
    let stdin = child.take_stdin();
    let stdout = child.take_stdout();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let finished = tokio::time::timeout(timeout, async {
        let write = async {
            if let Some(mut stdin) = stdin {
                // A child that does not read its stdin is answered by its exit.
                let _ = stdin.write_all(input).await;
                let _ = stdin.shutdown().await;
            }
        };
        let read_out = async {
            let Some(mut stdout) = stdout else { return };
            let mut chunk = [0u8; 8192];
            loop {
                match stdout.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let room = cap.saturating_sub(out.len());
                        out.extend_from_slice(&chunk[..n.min(room)]);
                    }
                }
            }
        };
        let read_err = async {
            while let Some(line) = stderr_lines.recv().await {
                let room = cap.saturating_sub(err.len());
                let line = format!("{line}\n");
                err.extend_from_slice(&line.as_bytes()[..line.len().min(room)]);
            }
        };
        let (_, _, _, status) = tokio::join!(write, read_out, read_err, child.wait());
        status
    })
    .await;
    let (status, timed_out) = match finished {
        Ok(status) => (status.ok(), false),
        // Nothing to save: no SIGTERM grace.
        Err(_elapsed) => (child.terminate(Duration::ZERO).await, true),
    };
    child.sweep_group();
    Ok(Captured {
        status: if timed_out { None } else { status },
        stdout: out,
        stderr: err,
        timed_out,
    })
}

/// Spawns `spec` (forwarding its stderr lines), retried briefly on ETXTBSY ("text file
/// busy": another thread of this process was forking while the executable was still open for
/// writing, which happens to freshly written scripts).
async fn spawn_retrying(
    spec: &CommandSpec,
) -> Result<(ChildProcess, tokio::sync::mpsc::Receiver<String>), SpawnError> {
    let mut attempt = 0u64;
    loop {
        attempt += 1;
        match ChildProcess::spawn_with_stderr_lines(spec) {
            #[cfg(unix)]
            Err(e) if attempt < 20 && e.source.raw_os_error() == Some(libc::ETXTBSY) => {
                tokio::time::sleep(Duration::from_millis(10 * attempt)).await;
            }
            other => return other,
        }
    }
}

/// Describes an exit status for users: `exit code 1`, `signal 9 (SIGKILL)`.
pub fn describe_exit(status: &ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exit code {code}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL)",
                libc::SIGTERM => " (SIGTERM)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGINT => " (SIGINT)",
                _ => "",
            };
            return format!("signal {signal}{name}");
        }
    }
    "an unknown status".into()
}

/// Whether `key` is on the scrub list ([`SCRUBBED_ENV`], or starts with one of
/// [`SCRUBBED_ENV_PREFIXES`]): the one predicate for every child the bridge starts, the CLIs
/// ([`CommandSpec::is_scrubbed`]) and sdk-probe's version probes alike.
///
/// ```
/// use bridge_core::process::is_scrubbed_env;
/// assert!(is_scrubbed_env("NODE_OPTIONS"));
/// assert!(is_scrubbed_env("npm_config_loglevel"));
/// assert!(!is_scrubbed_env("PATH"));
/// ```
pub fn is_scrubbed_env(key: &str) -> bool {
    SCRUBBED_ENV.contains(&key) || SCRUBBED_ENV_PREFIXES.iter().any(|p| key.starts_with(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrubs_node_and_loader_variables_but_honours_allow() {
        let mut spec = CommandSpec::new("x");
        assert!(spec.is_scrubbed(OsStr::new("NODE_OPTIONS")));
        assert!(spec.is_scrubbed(OsStr::new("npm_config_prefix")));
        assert!(spec.is_scrubbed(OsStr::new("LD_PRELOAD")));
        assert!(!spec.is_scrubbed(OsStr::new("PATH")));
        spec.allow_env.push("NODE_OPTIONS".into());
        assert!(!spec.is_scrubbed(OsStr::new("NODE_OPTIONS")));
    }

    #[test]
    fn stderr_tail_is_bounded() {
        let mut tail = StderrTail::default();
        for i in 0..1000 {
            tail.push(format!("line {i} {}", "x".repeat(2000)));
        }
        assert!(tail.text().len() <= StderrTail::MAX_BYTES + StderrTail::MAX_LINES);
        assert!(tail.text().ends_with('…'));
    }

    #[tokio::test]
    async fn terminate_kills_grandchildren_that_ignore_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let mut spec = CommandSpec::new("/bin/sh");
        spec.arg("-c").arg(format!(
            "sh -c 'trap \"\" TERM; echo $$ > {}; while :; do sleep 1; done' & wait",
            pidfile.display()
        ));
        let mut child = ChildProcess::spawn(&spec).unwrap();
        let mut pid = None;
        for _ in 0..100 {
            if let Ok(text) = std::fs::read_to_string(&pidfile)
                && let Ok(p) = text.trim().parse::<i32>()
            {
                pid = Some(p);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid = pid.expect("grandchild started");
        child.terminate(Duration::from_millis(300)).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        // SAFETY: probing with signal 0 has no side effects.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.contains(") Z "))
            .unwrap_or(true);
        assert!(!alive || zombie, "grandchild {pid} survived");
    }

    #[tokio::test]
    async fn a_private_file_is_owner_only_and_lives_as_long_as_the_child() {
        use std::os::unix::fs::PermissionsExt;
        let file = Arc::new(PrivateFile::new("bridge-test-", ".json", b"{\"k\":1}").unwrap());
        let path = file.path().to_path_buf();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let mut spec = CommandSpec::new("/bin/cat");
        spec.arg(&path);
        spec.files.push(file);
        let mut child = ChildProcess::spawn(&spec).unwrap();
        drop(spec);
        let mut out = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut child.take_stdout().unwrap(), &mut out)
            .await
            .unwrap();
        assert_eq!(out, "{\"k\":1}");
        assert!(path.exists(), "the child still holds it");
        drop(child);
        assert!(!path.exists(), "deleted with the child");
    }
}
