//! The sandbox every untrusted command runs in.
//!
//! Each command gets a fresh container (`run --init`, removed right after) as user
//! 65534 with no capabilities, no network, a read-only root, a private `/tmp`, bounded
//! memory, pids and file size, a seccomp profile without `memfd_create` and `execveat`,
//! no host `/etc/hosts` or `resolv.conf`, and only the mounts its [`Job`] names; at most
//! one of them writable, a fresh folder. When the command ends, the container and every child
//! it left go with it. Time limits come from the tool's own clock, output is streamed
//! with a cap, and an engine failure is an error, never an [`Outcome`].

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use xshell::{cmd, Shell};

use crate::container::engine::{Backend, Engine};
use crate::container::hostcpu::{HostCpu, TrialCgroup};
use crate::container::interrupt::{self, Live, Registration};
use crate::project;

/// The user every sandboxed command runs as (nobody), inside and outside the container.
pub const SANDBOX_UID: u32 = 65534;

/// A host folder made visible to a command.
#[derive(Debug, Clone)]
pub struct Mount {
    pub host: Utf8PathBuf,
    pub guest: &'static str,
    pub writable: bool,
}

pub use crate::evidence::domain::Limits;

impl Default for Limits {
    fn default() -> Self {
        Limits { memory: "4g".into(), pids: 512, output_cap_bytes: 256 << 20, perf_events: false }
    }
}

/// One command and what it may see.
#[derive(Debug, Clone)]
pub struct Job {
    pub argv: Vec<String>,
    /// The working directory as the command sees it.
    pub workdir: Utf8PathBuf,
    pub mounts: Vec<Mount>,
    pub timeout: Duration,
    /// Stop the command when its writable host folder grows past these bounds.
    pub disk: Option<DiskGuard>,
    /// Bytes fed to the command's standard input (none: it reads end-of-file at once).
    pub stdin: Option<Vec<u8>>,
    /// The command is its container's process 1 (the trial runner), with no init of the
    /// engine's: nothing inside can signal it.
    pub own_init: bool,
}

/// Bounds on a writable host folder, watched while the command runs (a mount has no
/// quota of its own).
#[derive(Debug, Clone)]
pub struct DiskGuard {
    pub dir: Utf8PathBuf,
    pub max_bytes: u64,
    pub max_files: u64,
}

impl DiskGuard {
    /// Whether the folder is over a bound; the walk stops as soon as it is.
    fn exceeded(&self) -> bool {
        use std::os::unix::fs::MetadataExt;
        let (mut bytes, mut files) = (0u64, 0u64);
        for entry in walkdir::WalkDir::new(&self.dir).into_iter().flatten() {
            files += 1;
            bytes += entry.metadata().map_or(0, |m| m.blocks() * 512);
            if files > self.max_files || bytes > self.max_bytes {
                return true;
            }
        }
        false
    }
}

pub use crate::evidence::domain::Outcome;

impl Outcome {
    pub fn success(self) -> bool {
        self == Outcome::Exited(0)
    }

    /// The exit status a container's init reports: 128+N means signal N. A command that
    /// exits 128+N on purpose is indistinguishable, and gets the same (failing) status.
    fn from_code(code: i32) -> Outcome {
        match code {
            129..=192 => Outcome::Signalled(code - 128),
            c => Outcome::Exited(c),
        }
    }

    fn from_status(status: std::process::ExitStatus) -> Outcome {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(c), _) => Outcome::from_code(c),
            (None, Some(s)) => Outcome::Signalled(s),
            (None, None) => Outcome::Signalled(0),
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Exited(c) => write!(f, "exit status {c}"),
            Outcome::Signalled(s) => write!(f, "killed by signal {s}{}", signal_name(*s)),
            Outcome::TimedOut => write!(f, "timed out"),
            Outcome::OutOfMemory => write!(f, "out of memory"),
            Outcome::OutputLimit => write!(f, "output over the cap"),
            Outcome::DiskLimit => write!(f, "wrote more than its folder may hold"),
        }
    }
}

fn signal_name(s: i32) -> &'static str {
    match s {
        4 => " (SIGILL)",
        6 => " (SIGABRT)",
        7 => " (SIGBUS)",
        8 => " (SIGFPE)",
        9 => " (SIGKILL)",
        11 => " (SIGSEGV)",
        15 => " (SIGTERM)",
        25 => " (SIGXFSZ: file size limit)",
        _ => "",
    }
}

/// What a finished command left: its outcome, how much it printed, and a bounded
/// excerpt of its stderr.
#[derive(Debug)]
pub struct Finished {
    pub outcome: Outcome,
    pub stdout_bytes: u64,
    pub stderr: String,
    pub wall: Duration,
    /// The container's CPU time as the host read it (`hostcpu.rs`), never the command's word.
    pub cpu: HostCpu,
}

/// Why the tool killed a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kill {
    Clock,
    Output,
    Disk,
}

impl Kill {
    fn outcome(self) -> Outcome {
        match self {
            Kill::Clock => Outcome::TimedOut,
            Kill::Output => Outcome::OutputLimit,
            Kill::Disk => Outcome::DiskLimit,
        }
    }
}

/// Where untrusted commands run: an engine and image (or the host), and the limits.
#[derive(Debug, Clone)]
pub struct Sandbox {
    pub backend: Backend,
    pub image: Option<String>,
    pub limits: Limits,
    /// Let anonymous memory become executable (a JIT's): only where the sandboxed
    /// program is qemu-user (an emulated image) or valgrind (memcheck runs).
    pub jit: bool,
    /// The cores its containers go to, each container to one of them (`--cpuset-cpus`),
    /// in turn; None: this process's own cores.
    pub cpus: Option<Vec<usize>>,
}

impl Sandbox {
    /// Run `job`, streaming its stdout into `stdout` (at most the output cap).
    pub fn run(&self, sh: &Shell, job: &Job, stdout: &mut (dyn Write + Send)) -> Result<Finished> {
        self.run_capped(sh, job, stdout, self.limits.output_cap_bytes)
    }

    /// Run `job` and keep its stdout in memory (at most `keep` bytes; more is
    /// `OutputLimit`). Files the command writes keep the sandbox's own size limit.
    pub fn run_captured(&self, sh: &Shell, job: &Job, keep: u64) -> Result<(Finished, Vec<u8>)> {
        let mut out = Vec::new();
        let f = self.run_capped(sh, job, &mut out, keep.min(self.limits.output_cap_bytes))?;
        Ok((f, out))
    }

    fn run_capped(&self, sh: &Shell, job: &Job, stdout: &mut (dyn Write + Send), cap: u64) -> Result<Finished> {
        interrupt::check()?;
        for m in &job.mounts {
            check_mount(m)?;
        }
        let scratch = tempfile::tempdir().context("cannot create a scratch folder")?;
        let scratch = Utf8Path::from_path(scratch.path()).context("non-UTF-8 temp path")?.to_owned();
        let start = Instant::now();
        let ((outcome, stdout_bytes, stderr), cpu) = match self.backend {
            Backend::Container(engine) => self.run_container(sh, engine, job, &scratch, (stdout, cap))?,
            Backend::Host => {
                (run_host(job, cap, stdout)?, HostCpu::Unavailable("host backend: no cgroup of its own".into()))
            }
        };
        std::fs::remove_dir_all(&scratch).ok();
        interrupt::check()?;
        Ok(Finished { outcome, stdout_bytes, stderr, wall: start.elapsed(), cpu })
    }

    /// The stdout of a trusted command of the image itself (no mounts, a minute, at
    /// most 16 MiB); its failure is an error.
    pub fn output(&self, sh: &Shell, argv: &[&str]) -> Result<Vec<u8>> {
        let job = Job {
            argv: argv.iter().map(|a| (*a).to_owned()).collect(),
            workdir: "/tmp".into(),
            mounts: vec![],
            timeout: Duration::from_mins(1),
            disk: None,
            stdin: None,
            own_init: false,
        };
        let (f, out) = self.run_captured(sh, &job, 16 << 20)?;
        if !f.outcome.success() {
            bail!(
                "`{}` in {}: {}: {}",
                argv.join(" "),
                self.image.as_deref().unwrap_or("host"),
                f.outcome,
                f.stderr.trim()
            );
        }
        Ok(out)
    }

    /// First line of `program --version` in the sandbox.
    pub fn version_line(&self, sh: &Shell, program: &str) -> Result<String> {
        let out = self.output(sh, &[program, "--version"])?;
        Ok(String::from_utf8_lossy(&out).lines().next().unwrap_or_default().trim().to_owned())
    }

    fn run_container(
        &self,
        sh: &Shell,
        engine: Engine,
        job: &Job,
        scratch: &Utf8Path,
        (stdout, cap): (&mut (dyn Write + Send), u64),
    ) -> Result<((Outcome, u64, String), HostCpu)> {
        let name = container_name();
        let mut args = self.run_args(engine, job, &name, self.pick())?;
        // Declared before `remove`: dropped (removed) after the container is gone.
        let cgroup = TrialCgroup::create(sh, engine, &name)?;
        if let Ok(cg) = &cgroup {
            args.splice(1..1, engine.cgroup_parent_args(cg.parent()));
        }
        let _registered = Registration::new(Live::Container(engine, name.clone()));
        let remove = Remove { engine, name: name.clone() };
        let shell = Shell::new()?;
        shell.change_dir(scratch);
        let mut command = engine.command(&shell, &args);
        let child = command
            .stdin(stdin_of(job))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start `{}`", engine.command_line(&args)))?;
        let kill = || {
            let _ = engine.call(sh, &["kill".into(), "--signal".into(), "KILL".into(), name.clone()]);
        };
        let watched = watch(child, job, cap, stdout, &kill)?;
        interrupt::check()?;
        let state = engine
            .state(sh, &name)
            .with_context(|| format!("`{}` failed: {}", engine.command_line(&args), watched.stderr.trim_end()))?;
        if !state.started() || !state.error.is_empty() {
            bail!(
                "the engine could not run the command ({}; `{}`; `cargo xtask doctor` checks the setup):\n{}",
                watched.status,
                engine.command_line(&args),
                [state.error.as_str(), watched.stderr.trim_end()].join("\n").trim()
            );
        }
        let outcome = match watched.killed {
            Some(kill) => kill.outcome(),
            None if over_disk(job) => Outcome::DiskLimit,
            None if engine.out_of_memory(&state, scratch) => Outcome::OutOfMemory,
            None => Outcome::from_code(state.exit_code),
        };
        drop(remove);
        let cpu = cgroup.map_or_else(HostCpu::Unavailable, |cg| cg.read());
        Ok(((outcome, watched.stdout_bytes, watched.stderr), cpu))
    }

    /// The one core the next container runs on: every candidate process sees one core
    /// in its affinity, whatever it is run for (a trial on a timing core, a KAT run on
    /// another), so the affinity does not tell them apart.
    fn pick(&self) -> Option<usize> {
        let pool = self.cpus.clone().filter(|c| !c.is_empty()).unwrap_or_else(crate::container::cores::allowed);
        crate::container::cores::next_of(&pool)
    }

    fn run_args(&self, engine: Engine, job: &Job, name: &str, core: Option<usize>) -> Result<Vec<String>> {
        let l = &self.limits;
        let mut args: Vec<String> = vec![
            "run".into(),
            "--name".into(),
            name.into(),
            "--init".into(),
            // The engine would keep its own unbounded copy of the output.
            "--log-driver=none".into(),
            format!("--user={SANDBOX_UID}:{SANDBOX_UID}"),
            "--network=none".into(),
            "--cap-drop=all".into(),
            "--security-opt=no-new-privileges".into(),
            // Nothing written during a command runs from /tmp: a program runs only from
            // its build folder (read-only), where the pinned compilers put it.
            "--tmpfs=/tmp:rw,noexec,nosuid,nodev,size=1g,mode=1777".into(),
            format!("--memory={}", l.memory),
            format!("--memory-swap={}", l.memory),
            format!("--pids-limit={}", l.pids),
            "--ulimit=nofile=1024:1024".into(),
            "--ulimit=nproc=1024:1024".into(),
            "--ulimit=core=0".into(),
            format!("--ulimit=fsize={}", l.output_cap_bytes.max(1)),
            "--env=HOME=/tmp".into(),
            format!("--workdir={}", job.workdir),
        ];
        if job.stdin.is_some() {
            args.push("--interactive".into());
        }
        if let Some(core) = core {
            args.push(format!("--cpuset-cpus={core}"));
        }
        args.extend(engine.read_only_args());
        args.push(format!("--security-opt=seccomp={}", seccomp_profile(engine, l.perf_events, self.jit)?));
        args.extend(engine.no_host_files_args(&empty_file()?));
        for m in &job.mounts {
            args.push(engine.volume_arg(&m.host, m.guest, m.writable));
        }
        args.push(self.image.clone().context("a container sandbox needs an image")?);
        args.extend(job.argv.iter().cloned());
        if job.own_init {
            args.retain(|a| a != "--init");
        }
        Ok(args)
    }
}

/// A long-lived container whose one process (the command of its [`Job`], run as its
/// process 1, with no init of the engine's) talks with the host over stdin and stdout:
/// the trial runner (`measure/runner.rs`). Same flags, mounts and limits as every other
/// sandbox; the host reads the container's cgroup while it lives. Removed when dropped.
pub struct Session {
    engine: Engine,
    name: String,
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    chunks: std::sync::mpsc::Receiver<Vec<u8>>,
    buffered: VecDeque<u8>,
    stderr: std::sync::Arc<std::sync::Mutex<Excerpt>>,
    // Dropped after the container is removed (in `drop`), the cgroup last.
    _registered: Registration,
    cgroup: std::result::Result<TrialCgroup, String>,
    /// The container's cores and their siblings, whose busy time the host reads.
    cores: Vec<usize>,
    _scratch: tempfile::TempDir,
}

/// Why a session's stream stopped before the host had what it waited for.
#[derive(Debug)]
pub enum Stopped {
    /// The tool's clock ran out (the container is then killed).
    TimedOut,
    /// The container ended; how, as the engine saw it.
    Ended(Outcome),
}

impl Sandbox {
    /// Start `job` as the process 1 of a fresh container and keep it running.
    pub fn session(&self, sh: &Shell, job: &Job) -> Result<Session> {
        interrupt::check()?;
        let Backend::Container(engine) = self.backend else { bail!("a session needs a container engine") };
        for m in &job.mounts {
            check_mount(m)?;
        }
        let scratch = tempfile::tempdir().context("cannot create a scratch folder")?;
        let name = container_name();
        // No init of the engine's: the command is process 1, which nothing inside can signal.
        let core = self.pick();
        let mut args =
            self.run_args(engine, &Job { stdin: Some(vec![]), own_init: true, ..job.clone() }, &name, core)?;
        let cgroup = TrialCgroup::create(sh, engine, &name)?;
        if let Ok(cg) = &cgroup {
            args.splice(1..1, engine.cgroup_parent_args(cg.parent()));
        }
        let registered = Registration::new(Live::Container(engine, name.clone()));
        let shell = Shell::new()?;
        shell.change_dir(scratch.path().to_str().context("non-UTF-8 temp path")?);
        let mut child = engine
            .command(&shell, &args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start `{}`", engine.command_line(&args)))?;
        let (tx, chunks) = std::sync::mpsc::channel();
        let mut out = child.stdout.take().context("no stdout pipe")?;
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = out.read(&mut buf) {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Excerpt::default()));
        let (mut err, sink) = (child.stderr.take().context("no stderr pipe")?, stderr.clone());
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                let _ = sink.lock().unwrap_or_else(std::sync::PoisonError::into_inner).write_all(&buf[..n]);
            }
        });
        let stdin = child.stdin.take();
        Ok(Session {
            engine,
            name,
            child,
            stdin,
            chunks,
            buffered: VecDeque::new(),
            stderr,
            _registered: registered,
            cgroup,
            cores: self.cores_watched(core),
            _scratch: scratch,
        })
    }
}

impl Sandbox {
    /// The cores a session's busy time is read on: its core and the core's siblings, when
    /// its cores were given (a timing step's).
    fn cores_watched(&self, core: Option<usize>) -> Vec<usize> {
        let Some(core) = core.filter(|_| self.cpus.is_some()) else { return Vec::new() };
        let mut all = crate::container::cores::siblings(Utf8Path::new("/"), core);
        all.push(core);
        all.sort_unstable();
        all
    }
}

impl Session {
    /// Busy time of the container's cores (and their siblings) so far, by every process
    /// on them, from the host's `/proc/stat`; None when the container may run anywhere.
    pub fn cores_busy(&self) -> Option<u64> {
        if self.cores.is_empty() {
            return None;
        }
        crate::container::cores::busy_ns(Utf8Path::new("/"), &self.cores)
    }

    /// The container's CPU time so far, as the host reads it from its cgroup.
    pub fn cpu(&self) -> HostCpu {
        match &self.cgroup {
            Ok(cg) => cg.read(),
            Err(why) => HostCpu::Unavailable(why.clone()),
        }
    }

    /// Send one line to the command's stdin.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the session's input is closed")?;
        stdin
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| stdin.flush())
            .context("cannot write to the session")
    }

    /// The next line of stdout (at most `max` bytes, newline dropped), by `deadline`.
    pub fn line(&mut self, max: usize, deadline: Instant) -> Result<std::result::Result<Vec<u8>, Stopped>> {
        loop {
            if let Some(i) = self.buffered.iter().position(|&b| b == b'\n') {
                let mut line: Vec<u8> = self.buffered.drain(..=i).collect();
                line.pop();
                return Ok(Ok(line));
            }
            if self.buffered.len() > max {
                return Ok(Ok(self.buffered.drain(..).collect()));
            }
            if let Err(stopped) = self.fill(deadline)? {
                return Ok(Err(stopped));
            }
        }
    }

    /// Exactly `n` bytes of stdout, by `deadline`.
    pub fn bytes(&mut self, n: usize, deadline: Instant) -> Result<std::result::Result<Vec<u8>, Stopped>> {
        while self.buffered.len() < n {
            if let Err(stopped) = self.fill(deadline)? {
                return Ok(Err(stopped));
            }
        }
        Ok(Ok(self.buffered.drain(..n).collect()))
    }

    /// What the command printed on stderr since the last call (a bounded excerpt).
    pub fn take_stderr(&self) -> String {
        std::mem::take(&mut *self.stderr.lock().unwrap_or_else(std::sync::PoisonError::into_inner)).text()
    }

    fn fill(&mut self, deadline: Instant) -> Result<std::result::Result<(), Stopped>> {
        use std::sync::mpsc::RecvTimeoutError;
        let wait = deadline.saturating_duration_since(Instant::now());
        match self.chunks.recv_timeout(wait) {
            Ok(chunk) => {
                self.buffered.extend(chunk);
                Ok(Ok(()))
            }
            Err(RecvTimeoutError::Timeout) => {
                interrupt::check()?;
                self.kill();
                Ok(Err(Stopped::TimedOut))
            }
            Err(RecvTimeoutError::Disconnected) => self.ended().map(|o| Err(Stopped::Ended(o))),
        }
    }

    fn kill(&mut self) {
        let sh = Shell::new();
        if let Ok(sh) = sh {
            let _ = self.engine.call(&sh, &["kill".into(), "--signal".into(), "KILL".into(), self.name.clone()]);
        }
    }

    /// How the container ended; an error when the engine could not run it at all, or
    /// when the tool was interrupted.
    fn ended(&mut self) -> Result<Outcome> {
        drop(self.stdin.take());
        let status = self.child.wait().context("cannot wait for the engine")?;
        interrupt::check()?;
        let sh = Shell::new()?;
        let state = self.engine.state(&sh, &self.name)?;
        if !state.started() || !state.error.is_empty() {
            bail!(
                "the engine could not run the session ({status}; `cargo xtask doctor` checks the setup):\n{}",
                [state.error.as_str(), self.take_stderr().trim_end()].join("\n").trim()
            );
        }
        let scratch = Utf8Path::from_path(self._scratch.path()).context("non-UTF-8 temp path")?;
        if self.engine.out_of_memory(&state, scratch) {
            return Ok(Outcome::OutOfMemory);
        }
        Ok(Outcome::from_code(state.exit_code))
    }
}

impl Drop for Session {
    /// Removed at once (one engine call, which kills what still runs), then reaped.
    fn drop(&mut self) {
        drop(self.stdin.take());
        drop(Remove { engine: self.engine, name: self.name.clone() });
        let _ = self.child.wait();
        // A session dropped while its engine was still creating the container (Ctrl-C
        // just after it started) outlives that removal; with the engine's client gone,
        // nothing can create it any more, so a second removal is the last word.
        if let Ok(sh) = Shell::new() {
            let _ = self.engine.call_output(&sh, &self.engine.remove_args(&self.name));
        }
    }
}

/// Removes the container when the run is over, whatever happened.
struct Remove {
    engine: Engine,
    name: String,
}

impl Drop for Remove {
    fn drop(&mut self) {
        if let Ok(sh) = Shell::new() {
            if let Err(e) = self.engine.call(&sh, &self.engine.remove_args(&self.name)) {
                crate::warning!("warning: could not remove container {}: {e:#}", self.name);
            }
        }
    }
}

fn container_name() -> String {
    use std::sync::atomic::AtomicU64;
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    format!("ngcc-repro-{}-{}-{nanos}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// A mount must be a real folder (not a link) whose path the engine can parse; a
/// writable one is handed to the sandbox user.
fn check_mount(m: &Mount) -> Result<()> {
    if m.host.as_str().contains(':') || m.host.as_str().contains(',') {
        bail!("cannot mount {}: the path contains ':' or ','", m.host);
    }
    let meta = std::fs::symlink_metadata(&m.host).with_context(|| format!("cannot mount {}", m.host))?;
    if !meta.is_dir() {
        bail!("cannot mount {}: not a folder", m.host);
    }
    if m.writable {
        give_to_sandbox(&m.host)?;
    }
    Ok(())
}

/// Make a fresh host folder writable for the sandbox user: owned by it when the tool
/// runs as root (rootful engines map it 1:1), else open to all (rootless engines map
/// it to a subordinate id) inside the tool's own cache.
pub fn give_to_sandbox(dir: &Utf8Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        std::os::unix::fs::chown(dir, Some(SANDBOX_UID), Some(SANDBOX_UID))
            .with_context(|| format!("cannot hand {dir} to the sandbox user"))
    } else {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777))
            .with_context(|| format!("cannot open {dir} to the sandbox user"))
    }
}

/// The last look at a guarded folder, once the command has ended (a fast writer can
/// finish between two looks while it runs).
fn over_disk(job: &Job) -> bool {
    job.disk.as_ref().is_some_and(DiskGuard::exceeded)
}

struct Watched {
    status: std::process::ExitStatus,
    killed: Option<Kill>,
    stdout_bytes: u64,
    stderr: String,
}

/// Wait for `child` under the tool's clock while pumping its output; `kill` stops it
/// when the clock runs out or stdout passes `cap`.
fn watch(mut child: Child, job: &Job, cap: u64, stdout: &mut (dyn Write + Send), kill: &dyn Fn()) -> Result<Watched> {
    let over = AtomicBool::new(false);
    let out_pipe = child.stdout.take().context("no stdout pipe")?;
    let err_pipe = child.stderr.take().context("no stderr pipe")?;
    let in_pipe = child.stdin.take();
    let start = Instant::now();
    std::thread::scope(|s| {
        if let (Some(mut pipe), Some(bytes)) = (in_pipe, job.stdin.as_deref()) {
            // A command that stops reading early closes the pipe: not the tool's failure.
            s.spawn(move || drop(pipe.write_all(bytes)));
        }
        let out = s.spawn(|| pump(out_pipe, stdout, cap, &over));
        let err = s.spawn(|| {
            let mut excerpt = Excerpt::default();
            let never = AtomicBool::new(false);
            pump(err_pipe, &mut excerpt, u64::MAX, &never).map(|_| excerpt.text())
        });
        let mut killed = None;
        let mut last_kill: Option<Instant> = None;
        let mut last_disk = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if killed.is_none() {
                killed = if over.load(Ordering::SeqCst) {
                    Some(Kill::Output)
                } else if start.elapsed() > job.timeout {
                    Some(Kill::Clock)
                } else {
                    None
                };
            }
            if killed.is_none() && last_disk.elapsed() > Duration::from_secs(1) {
                last_disk = Instant::now();
                killed = job.disk.as_ref().filter(|g| g.exceeded()).map(|_| Kill::Disk);
            }
            // Again every second: a container may not exist yet at the first attempt.
            let due = last_kill.is_none_or(|t| t.elapsed() > Duration::from_secs(1));
            if (killed.is_some() || interrupt::is_set()) && due {
                kill();
                last_kill = Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let stdout_bytes = out.join().map_err(|_| anyhow::anyhow!("stdout reader panicked"))??;
        let stderr = err.join().map_err(|_| anyhow::anyhow!("stderr reader panicked"))??;
        Ok(Watched { status, killed, stdout_bytes, stderr })
    })
}

fn stdin_of(job: &Job) -> Stdio {
    if job.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    }
}

/// Copy `from` into `to` until EOF, writing at most `cap` bytes; past the cap the rest
/// is read and dropped (so the writer never blocks) and `over` is set.
fn pump(mut from: impl Read, to: &mut (dyn Write + Send), cap: u64, over: &AtomicBool) -> Result<u64> {
    let mut buf = vec![0u8; 1 << 16];
    let mut total: u64 = 0;
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e).context("cannot read the command's output"),
        };
        let room = cap.saturating_sub(total).min(n as u64) as usize;
        if room > 0 {
            to.write_all(&buf[..room]).context("cannot store the command's output")?;
        }
        total += n as u64;
        if total > cap {
            over.store(true, Ordering::SeqCst);
        }
    }
    Ok(total)
}

/// The first and last 32 KiB of a stream: compiler errors come first, crashes last.
#[derive(Default)]
struct Excerpt {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    dropped: u64,
}

const EXCERPT: usize = 32 << 10;

impl Write for Excerpt {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let take = (EXCERPT - self.head.len()).min(buf.len());
        self.head.extend_from_slice(&buf[..take]);
        for &b in &buf[take..] {
            if self.tail.len() == EXCERPT {
                self.tail.pop_front();
                self.dropped += 1;
            }
            self.tail.push_back(b);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Excerpt {
    fn text(self) -> String {
        let mut s = String::from_utf8_lossy(&self.head).into_owned();
        if self.dropped > 0 {
            s.push_str(&format!("\n[... {} bytes left out ...]\n", self.dropped));
        }
        let tail: Vec<u8> = self.tail.into_iter().collect();
        s.push_str(&String::from_utf8_lossy(&tail));
        project::printable(&s)
    }
}

/// The unisolated host backend: the command in its own process group, killed as a
/// group when it ends, so that no child outlives it.
fn run_host(job: &Job, cap: u64, stdout: &mut (dyn Write + Send)) -> Result<(Outcome, u64, String)> {
    use std::os::unix::process::CommandExt;
    let sh = Shell::new()?;
    sh.change_dir(&job.workdir);
    let (program, args) = job.argv.split_first().context("empty command")?;
    let mut command: std::process::Command = cmd!(sh, "{program} {args...}").into();
    let child = command
        .process_group(0)
        .stdin(stdin_of(job))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run `{}` in {}", job.argv.join(" "), job.workdir))?;
    let group = Live::HostGroup(child.id() as i32);
    let _registered = Registration::new(group.clone());
    let watched = watch(child, job, cap, stdout, &|| interrupt::kill(&group))?;
    interrupt::kill(&group);
    let outcome = match watched.killed {
        Some(kill) => kill.outcome(),
        None if over_disk(job) => Outcome::DiskLimit,
        None => Outcome::from_status(watched.status),
    };
    Ok((outcome, watched.stdout_bytes, watched.stderr))
}

/// Syscalls no sandboxed command may make: `memfd_create` + `fexecve` (or `execveat`)
/// would run code that is in no build folder, past the noexec `/tmp`.
const DENIED_SYSCALLS: &[&str] = &["memfd_create", "execveat"];

/// The engine's default seccomp profile with [`DENIED_SYSCALLS`] failing with ENOSYS (as
/// on a kernel without them: qemu-user then fakes `/proc/self/maps` in a file of the
/// writable `/tmp` instead of a memfd, which valgrind under emulation needs), what could
/// intercept the harness's raw system calls or clock from inside the process refused
/// ([`refuse_interception`]), executable anonymous memory refused unless `jit`
/// ([`refuse_exec_memory`]) and, for timing only, `perf_event_open` allowed; written to
/// the cache. Without the default profile there is no sandbox: an error, never a weaker
/// filter.
fn seccomp_profile(engine: Engine, perf_events: bool, jit: bool) -> Result<Utf8PathBuf> {
    let (default, package) = engine.seccomp_default();
    let derived = derive_seccomp(default, package, perf_events, jit)?;
    let name = format!("seccomp{}{}.json", if perf_events { "-perf" } else { "" }, if jit { "-jit" } else { "" });
    let path = project::cache_dir().join(name);
    project::write_atomic(&path, derived.as_bytes())?;
    Ok(path)
}

fn derive_seccomp(default: &Utf8Path, package: &str, perf_events: bool, jit: bool) -> Result<String> {
    let text = std::fs::read_to_string(default).with_context(|| {
        format!(
            "cannot read {default}, the seccomp profile every sandbox starts from: install {package} \
             (`cargo xtask doctor` checks it)"
        )
    })?;
    let unexpected = || format!("unexpected seccomp profile {default}");
    let mut derived = set_syscalls(&text, DENIED_SYSCALLS, SyscallRule::Deny(libc::ENOSYS)).with_context(unexpected)?;
    if perf_events {
        derived = set_syscalls(&derived, &["perf_event_open"], SyscallRule::Allow).with_context(unexpected)?;
    }
    derived = refuse_interception(&derived).with_context(unexpected)?;
    if !jit {
        derived = refuse_exec_memory(&derived).with_context(unexpected)?;
    }
    Ok(derived)
}

const PROT_EXEC: u64 = libc::PROT_EXEC as u64;
const MAP_ANONYMOUS: u64 = libc::MAP_ANONYMOUS as u64;
const SHM_EXEC: u64 = 0o100000;
/// `prctl` options that would let the process trap its own clock reads or system calls:
/// `PR_SET_SECCOMP` (22) and `PR_SET_TSC` (26), whose `PR_TSC_SIGSEGV` makes `rdtsc`
/// fault into a handler that returns what it likes.
const PRCTL_REFUSED: [u64; 2] = [libc::PR_SET_SECCOMP as u64, libc::PR_SET_TSC as u64];

/// One comparison of an OCI seccomp rule: `(arg[index] & mask) == value`.
fn masked(index: u32, mask: u64, value: u64) -> serde_json::Value {
    serde_json::json!({ "index": index, "value": mask, "valueTwo": value, "op": "SCMP_CMP_MASKED_EQ" })
}

fn rule(names: &[&str], allow: bool, args: Vec<serde_json::Value>) -> serde_json::Value {
    if allow {
        serde_json::json!({ "names": names, "action": "SCMP_ACT_ALLOW", "args": args })
    } else {
        serde_json::json!({ "names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": libc::EPERM, "args": args })
    }
}

/// Replace every rule naming `names` by `rules` (disjoint conditional rules: no two of
/// them with different actions match one call, so their order does not matter).
fn replace_rules(profile: &str, names: &[&str], rules: Vec<serde_json::Value>) -> Result<String> {
    let mut p: serde_json::Value = serde_json::from_str(profile)?;
    let list = p["syscalls"].as_array_mut().context("no syscalls array")?;
    for r in list.iter_mut() {
        if let Some(listed) = r["names"].as_array_mut() {
            listed.retain(|n| n.as_str().is_none_or(|n| !names.contains(&n)));
        }
    }
    list.retain(|r| r["names"].as_array().is_none_or(|n| !n.is_empty()));
    list.extend(rules);
    Ok(serde_json::to_string_pretty(&p)?)
}

/// `seccomp` refused (EPERM), and `prctl` allowed only for options 0..255 other than
/// [`PRCTL_REFUSED`] (EPERM), compared on all 64 bits (the kernel takes the option as an
/// int: a refused option with high bits set must not pass as a large one); other
/// options get the profile's default action.
pub fn refuse_interception(profile: &str) -> Result<String> {
    let mut rules = vec![rule(&["seccomp"], false, vec![])];
    // Aligned blocks [base, base + 2^k) by masks over the whole argument.
    let mut base = 0u64;
    while base < 256 {
        let mut size = 1u64;
        while base.is_multiple_of(size * 2)
            && base + size * 2 <= 256
            && !PRCTL_REFUSED.iter().any(|&r| (base..base + size * 2).contains(&r))
        {
            size *= 2;
        }
        let allow = !PRCTL_REFUSED.contains(&base);
        rules.push(rule(&["prctl"], allow, vec![masked(0, !(size - 1), base)]));
        base += size;
    }
    for refused in PRCTL_REFUSED {
        // Also with the upper half set: the kernel sees the option as an int.
        rules.push(rule(&["prctl"], false, vec![masked(0, 0xffff_ffff, refused)]));
    }
    replace_rules(profile, &["seccomp", "prctl"], rules)
}

/// No executable anonymous memory after load: `mmap` with `PROT_EXEC` and
/// `MAP_ANONYMOUS`, `mprotect`/`pkey_mprotect` with `PROT_EXEC` and `shmat` with
/// `SHM_EXEC` fail with EPERM. The dynamic loader maps libraries from their files, which
/// stays allowed; a library with text relocations or an executable stack then fails to
/// load (its loader needs `mprotect(PROT_EXEC)`).
pub fn refuse_exec_memory(profile: &str) -> Result<String> {
    let rules = vec![
        rule(&["mmap"], true, vec![masked(2, PROT_EXEC, 0)]),
        rule(&["mmap"], true, vec![masked(2, PROT_EXEC, PROT_EXEC), masked(3, MAP_ANONYMOUS, 0)]),
        rule(&["mmap"], false, vec![masked(2, PROT_EXEC, PROT_EXEC), masked(3, MAP_ANONYMOUS, MAP_ANONYMOUS)]),
        rule(&["mprotect", "pkey_mprotect"], true, vec![masked(2, PROT_EXEC, 0)]),
        rule(&["mprotect", "pkey_mprotect"], false, vec![masked(2, PROT_EXEC, PROT_EXEC)]),
        rule(&["shmat"], true, vec![masked(2, SHM_EXEC, 0)]),
        rule(&["shmat"], false, vec![masked(2, SHM_EXEC, SHM_EXEC)]),
    ];
    replace_rules(profile, &["mmap", "mprotect", "pkey_mprotect", "shmat"], rules)
}

/// An empty file of the tool's, mounted read-only over the host files an engine would
/// copy into a container.
fn empty_file() -> Result<Utf8PathBuf> {
    let path = project::cache_dir().join("empty");
    if path.as_str().contains(':') || path.as_str().contains(',') {
        bail!("cannot mount {path}: the path contains ':' or ','");
    }
    // Made once and never replaced: a container of another run may be mounting it now
    // (runc refuses a mount source that was renamed over).
    if !project::is_regular(&path) {
        project::write_atomic(&path, b"")?;
    }
    let meta = std::fs::symlink_metadata(&path).with_context(|| format!("cannot read {path}"))?;
    if !meta.is_file() || meta.len() != 0 {
        bail!("{path} is not an empty file: remove it, the tool makes it again");
    }
    Ok(path)
}

/// What a seccomp rule does with the syscalls it names.
#[derive(Debug, Clone, Copy)]
pub enum SyscallRule {
    Allow,
    /// Fail with this errno.
    Deny(i32),
}

/// Remove `names` from every rule of a seccomp profile and add one unconditional rule
/// for them.
pub fn set_syscalls(profile: &str, names: &[&str], rule: SyscallRule) -> Result<String> {
    let one = match rule {
        SyscallRule::Allow => serde_json::json!({ "names": names, "action": "SCMP_ACT_ALLOW", "args": [] }),
        SyscallRule::Deny(errno) => {
            serde_json::json!({ "names": names, "action": "SCMP_ACT_ERRNO", "errnoRet": errno, "args": [] })
        }
    };
    replace_rules(profile, names, vec![one])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_syscalls_moves_the_names_into_one_rule() {
        let profile = r#"{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[
            {"names":["read","write","memfd_create"],"action":"SCMP_ACT_ALLOW","args":[]},
            {"names":["bpf","perf_event_open"],"action":"SCMP_ACT_ERRNO","args":[]},
            {"names":["perf_event_open"],"action":"SCMP_ACT_ERRNO","args":[]},
            {"names":["execveat"],"action":"SCMP_ACT_ALLOW","includes":{"caps":["CAP_SYS_ADMIN"]}}]}"#;
        let out: serde_json::Value =
            serde_json::from_str(&set_syscalls(profile, &["perf_event_open"], SyscallRule::Allow).unwrap()).unwrap();
        let rules = out["syscalls"].as_array().unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(rules[1]["names"], serde_json::json!(["bpf"]));
        assert_eq!(rules[1]["action"], "SCMP_ACT_ERRNO");
        assert_eq!(rules[3], serde_json::json!({"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW", "args": []}));
        assert_eq!(out["defaultAction"], "SCMP_ACT_ERRNO");
        // Denied names leave every rule that allowed them, conditional ones included.
        let text = set_syscalls(profile, DENIED_SYSCALLS, SyscallRule::Deny(libc::ENOSYS)).unwrap();
        let out: serde_json::Value = serde_json::from_str(&text).unwrap();
        let rules = out["syscalls"].as_array().unwrap();
        assert_eq!(rules.len(), 4);
        assert_eq!(rules[0]["names"], serde_json::json!(["read", "write"]));
        let deny = serde_json::json!({"names": ["memfd_create", "execveat"], "action": "SCMP_ACT_ERRNO",
            "errnoRet": 38, "args": []});
        assert_eq!(rules[3], deny);
    }

    /// What a profile does with `name`: each rule naming it, as action and errno.
    fn rules_for(profile: &serde_json::Value, name: &str) -> Vec<String> {
        let rules = profile["syscalls"].as_array().unwrap();
        let named = rules.iter().filter(|r| r["names"].as_array().unwrap().iter().any(|n| n == name));
        named.map(|r| format!("{} {}", r["action"].as_str().unwrap(), r["errnoRet"])).collect()
    }

    #[test]
    fn every_container_gets_the_derived_seccomp_profile_nodev_and_no_host_files() {
        let job = Job {
            argv: vec!["true".into()],
            workdir: "/tmp".into(),
            mounts: vec![Mount { host: "/x".into(), guest: "/src", writable: false }],
            timeout: Duration::from_secs(1),
            disk: None,
            stdin: None,
            own_init: false,
        };
        for (engine, perf_events) in [(Engine::Podman, false), (Engine::Podman, true), (Engine::Docker, false)] {
            let limits = Limits { perf_events, ..Limits::default() };
            let sb = Sandbox {
                backend: Backend::Container(engine),
                image: Some("img".into()),
                limits,
                jit: false,
                cpus: None,
            };
            if !engine.seccomp_default().0.exists() {
                continue; // the error is tested below
            }
            let args = sb.run_args(engine, &job, "c", None).unwrap();
            let seccomp = args.iter().find_map(|a| a.strip_prefix("--security-opt=seccomp=")).expect("a profile");
            let p: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(seccomp).unwrap()).unwrap();
            assert_eq!(rules_for(&p, "memfd_create"), ["SCMP_ACT_ERRNO 38"]);
            assert_eq!(rules_for(&p, "execveat"), ["SCMP_ACT_ERRNO 38"]);
            let perf = rules_for(&p, "perf_event_open");
            assert_eq!(perf == ["SCMP_ACT_ALLOW null"], perf_events, "{engine:?}: {perf:?}");
            assert!(args.contains(&engine.volume_arg("/x".into(), "/src", false)), "{args:?}");
            assert!(args.iter().any(|a| a.contains(":/etc/resolv.conf:ro")), "{args:?}");
        }
    }

    #[test]
    fn every_container_goes_to_one_core_of_its_sandboxs_in_turn() {
        let sb = |cpus| Sandbox { backend: Backend::Host, image: None, limits: Limits::default(), jit: false, cpus };
        let on = sb(Some(vec![2, 3, 5]));
        let picked: std::collections::BTreeSet<usize> = (0..9).filter_map(|_| on.pick()).collect();
        assert_eq!(picked.into_iter().collect::<Vec<_>>(), [2, 3, 5], "one core each time, every core in turn");
        let mine = crate::container::cores::allowed();
        for free in [sb(None), sb(Some(vec![]))] {
            assert!(free.pick().is_some_and(|c| mine.contains(&c)), "one of the tool's own cores");
        }
        let job = Job {
            argv: vec!["true".into()],
            workdir: "/tmp".into(),
            mounts: vec![],
            timeout: Duration::from_secs(1),
            disk: None,
            stdin: None,
            own_init: false,
        };
        let engine = Engine::Podman;
        if engine.seccomp_default().0.exists() {
            let b = Sandbox { backend: Backend::Container(engine), image: Some("i".into()), ..on };
            let args = b.run_args(engine, &job, "c", Some(3)).unwrap();
            assert_eq!(args.iter().filter(|a| a.starts_with("--cpuset")).collect::<Vec<_>>(), ["--cpuset-cpus=3"]);
        }
    }

    #[test]
    fn no_default_seccomp_profile_is_an_error_naming_the_package() {
        let e = derive_seccomp("/nonexistent/seccomp.json".into(), "the-package", false, false).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("/nonexistent/seccomp.json") && e.contains("install the-package"), "{e}");
    }

    #[test]
    fn exit_codes_map_to_outcomes_without_inventing_timeouts() {
        assert_eq!(Outcome::from_code(0), Outcome::Exited(0));
        assert_eq!(Outcome::from_code(124), Outcome::Exited(124));
        assert_eq!(Outcome::from_code(137), Outcome::Signalled(9));
        assert_eq!(Outcome::from_code(127), Outcome::Exited(127));
        assert_eq!(Outcome::Signalled(9).to_string(), "killed by signal 9 (SIGKILL)");
    }

    #[test]
    fn pump_keeps_at_most_the_cap_and_reads_everything() {
        let input = vec![7u8; 300_000];
        let mut out = Vec::new();
        let over = AtomicBool::new(false);
        let total = pump(&input[..], &mut out, 100_000, &over).unwrap();
        assert_eq!((total, out.len()), (300_000, 100_000));
        assert!(over.load(Ordering::SeqCst));
        let mut out = Vec::new();
        let over = AtomicBool::new(false);
        pump(&input[..1000], &mut out, 1000, &over).unwrap();
        assert!(!over.load(Ordering::SeqCst), "exactly the cap is not over it");
    }

    #[test]
    fn excerpt_keeps_head_and_tail() {
        let mut e = Excerpt::default();
        e.write_all(b"first error\n").unwrap();
        e.write_all(&vec![b'x'; 3 * EXCERPT]).unwrap();
        e.write_all(b"\nlast line\n").unwrap();
        let t = e.text();
        assert!(t.starts_with("first error\n"));
        assert!(t.ends_with("last line\n"));
        assert!(t.contains("bytes left out"));
        assert!(t.len() < 3 * EXCERPT);
    }

    #[test]
    fn host_commands_stop_on_the_tools_clock_and_at_the_output_cap() {
        let sb = Sandbox { backend: Backend::Host, image: None, limits: Limits::default(), jit: false, cpus: None };
        let sh = Shell::new().unwrap();
        let job = |argv: &[&str], secs| Job {
            argv: argv.iter().map(std::string::ToString::to_string).collect(),
            workdir: "/".into(),
            mounts: vec![],
            timeout: Duration::from_secs(secs),
            disk: None,
            stdin: None,
            own_init: false,
        };
        let (f, _) = sb.run_captured(&sh, &job(&["sleep", "30"], 1), 1024).unwrap();
        assert_eq!(f.outcome, Outcome::TimedOut);
        assert!(f.wall < Duration::from_secs(10));
        let (f, out) = sb.run_captured(&sh, &job(&["yes"], 30), 4096).unwrap();
        assert_eq!(f.outcome, Outcome::OutputLimit);
        assert_eq!(out.len(), 4096);
        let (f, _) = sb.run_captured(&sh, &job(&["sh", "-c", "kill -KILL $$"], 30), 1024).unwrap();
        assert_eq!(f.outcome, Outcome::Signalled(9));
    }
}

#[cfg(test)]
mod interception_tests {
    use super::*;

    /// What the derived rules do with one call, evaluated as the kernel filter would
    /// (all comparisons of a rule must match; no two matching rules may disagree).
    fn action(profile: &serde_json::Value, name: &str, args: [u64; 4]) -> Option<String> {
        let mut found: Option<String> = None;
        for r in profile["syscalls"].as_array().unwrap() {
            if !r["names"].as_array().unwrap().iter().any(|n| n == name) {
                continue;
            }
            let all = r["args"].as_array().into_iter().flatten().all(|a| {
                let (i, mask, want) = (
                    a["index"].as_u64().unwrap() as usize,
                    a["value"].as_u64().unwrap(),
                    a["valueTwo"].as_u64().unwrap(),
                );
                assert_eq!(a["op"], "SCMP_CMP_MASKED_EQ");
                args[i] & mask == want
            });
            if all {
                let this = format!("{} {}", r["action"].as_str().unwrap(), r["errnoRet"]);
                assert!(found.as_ref().is_none_or(|f| *f == this), "{name} {args:?}: {found:?} and {this}");
                found = Some(this);
            }
        }
        found
    }

    #[test]
    fn clock_interception_and_executable_anonymous_memory_are_refused() {
        let base = r#"{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":38,"syscalls":[
            {"names":["read","prctl","mmap","mprotect","pkey_mprotect","seccomp","shmat"],"action":"SCMP_ACT_ALLOW","args":[]}]}"#;
        let derived = refuse_exec_memory(&refuse_interception(base).unwrap()).unwrap();
        let p: serde_json::Value = serde_json::from_str(&derived).unwrap();
        let (allow, eperm) = (Some("SCMP_ACT_ALLOW null".to_owned()), Some("SCMP_ACT_ERRNO 1".to_owned()));
        assert_eq!(action(&p, "read", [0; 4]), allow);
        assert_eq!(action(&p, "seccomp", [1, 0, 0, 0]), eperm);
        for option in 0..300u64 {
            let want = match option {
                22 | 26 => eperm.clone(),
                256.. => None, // the profile's default action
                _ => allow.clone(),
            };
            assert_eq!(action(&p, "prctl", [option, 0, 0, 0]), want, "prctl({option})");
        }
        // The kernel reads the option as an int: high bits must not smuggle 26 through.
        assert_eq!(action(&p, "prctl", [(1 << 32) | 26, 0, 0, 0]), eperm);
        assert_eq!(action(&p, "prctl", [(1 << 32) | 15, 0, 0, 0]), None);
        let (rx, rw, anon, private) = (5, 3, 0x22, 0x02);
        assert_eq!(action(&p, "mmap", [0, 4096, rx, private]), allow, "a library mapped from its file");
        assert_eq!(action(&p, "mmap", [0, 4096, rw, anon]), allow);
        assert_eq!(action(&p, "mmap", [0, 4096, rx, anon]), eperm);
        assert_eq!(action(&p, "mmap", [0, 4096, 4 | (1 << 40), anon | (1 << 40)]), eperm);
        assert_eq!(action(&p, "mprotect", [0, 4096, 1, 0]), allow);
        assert_eq!(action(&p, "mprotect", [0, 4096, rx, 0]), eperm);
        assert_eq!(action(&p, "pkey_mprotect", [0, 4096, 7, 0]), eperm);
        assert_eq!(action(&p, "shmat", [0, 0, 0o100000, 0]), eperm);
        assert_eq!(action(&p, "shmat", [0, 0, 0o10000, 0]), allow);
    }
}
